#!/bin/sh
# The Qwen3 parity tests again with narrower kernel tables forced: the
# scalar reference (NECTAR_NO_SIMD=1, the portable fallback) and, on x86-64,
# AVX2 (NECTAR_SIMD=avx2) and AVX-512 without AMX tiles (NECTAR_SIMD=avx512;
# the default table is "amx" where the CPU has it), so every table is checked
# against HF end to end.
BIN=${NECTAR_BUILD:-build}/tests/models/test_qwen3_parity
if [ ! -x "$BIN" ]; then echo "SKIP qwen3_scalar: $BIN not built"; exit 0; fi
out=$(mktemp)
status=0
run() { # PREFIX ENV=VALUE
    env "$2" "$BIN" >"$out" 2>&1 || status=1
    sed -e "s/^PASS /PASS $1_/" -e "s/^FAIL /FAIL $1_/" -e "s/^SKIP /SKIP $1_/" "$out"
}
run scalar NECTAR_NO_SIMD=1
case $(uname -m) in x86_64|amd64)
    run avx2 NECTAR_SIMD=avx2
    run avx512 NECTAR_SIMD=avx512
    ;;
esac
rm -f "$out"
exit $status
