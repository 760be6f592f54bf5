#!/bin/sh
# The ModernBERT parity tests again with narrower kernel tables forced: the
# scalar reference (NECTAR_NO_SIMD=1) and, on x86-64, AVX2 (NECTAR_SIMD=avx2)
# and AVX-512 without AMX (NECTAR_SIMD=avx512: the packed fp32 panels, which
# AMX machines otherwise skip), so the encoder matches HF whichever table
# the machine picks. Then the default table under NECTAR_BF16=fast: bf16
# weights on bf16 dot products (the packed tiles of gemm_bf16w.h's fast
# table where the CPU has AVX512-BF16), activations rounded to bf16.
BIN=${NECTAR_BUILD:-build}/tests/encoders/test_modernbert_parity
if [ ! -x "$BIN" ]; then echo "SKIP modernbert_kernels: $BIN not built"; exit 0; fi
. tests/common/on_tables.sh
tables="scalar avx2"
grep -q avx512f /proc/cpuinfo 2>/dev/null && tables="$tables avx512"
nc_on_tables "$BIN" $tables || status=1
out=$(NECTAR_BF16=fast "$BIN" 2>&1) || status=1
echo "$out" | sed -n -e "s/^PASS /PASS bf16_fast_/p" -e "s/^FAIL /FAIL bf16_fast_/p" \
    -e "s/^SKIP /SKIP bf16_fast_/p" -e "/^  /p"
exit ${status:-0}
