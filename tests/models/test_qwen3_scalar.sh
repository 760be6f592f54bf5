#!/bin/sh
# The Qwen3 parity tests again with narrower kernel tables forced: the
# scalar reference (NECTAR_NO_SIMD=1, the portable fallback) and, on x86-64,
# AVX2 (NECTAR_SIMD=avx2) and AVX-512 without AMX tiles (NECTAR_SIMD=avx512;
# the default table is "amx" where the CPU has it), so every table is checked
# against HF end to end.
BIN=${NECTAR_BUILD:-build}/tests/models/test_qwen3_parity
if [ ! -x "$BIN" ]; then echo "SKIP qwen3_scalar: $BIN not built"; exit 0; fi
. tests/common/on_tables.sh
nc_on_tables "$BIN" scalar avx2 avx512
