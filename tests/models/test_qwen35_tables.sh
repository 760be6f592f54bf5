#!/bin/sh
# The Qwen3.5 parity tests on every kernel table this CPU has, not only the
# default one: the scalar reference (NECTAR_NO_SIMD=1) and, on x86-64, AVX2
# and AVX-512 without AMX tiles, so each table is checked against HF.
BIN=${NECTAR_BUILD:-build}/tests/models/test_qwen35_parity
if [ ! -x "$BIN" ]; then echo "SKIP qwen35_tables: $BIN not built"; exit 0; fi
. tests/common/on_tables.sh
nc_on_tables "$BIN" scalar avx2 avx512
