#!/bin/sh
# The ModernBERT parity tests again with narrower kernel tables forced: the
# scalar reference (NECTAR_NO_SIMD=1) and, on x86-64, AVX2 (NECTAR_SIMD=avx2)
# and AVX-512 without AMX (NECTAR_SIMD=avx512: the packed fp32 panels, which
# AMX machines otherwise skip), so the encoder matches HF whichever table
# the machine picks.
BIN=${NECTAR_BUILD:-build}/tests/encoders/test_modernbert_parity
if [ ! -x "$BIN" ]; then echo "SKIP modernbert_kernels: $BIN not built"; exit 0; fi
out=$(mktemp)
status=0
run() { # PREFIX ENV=VALUE
    env "$2" "$BIN" >"$out" 2>&1 || status=1
    sed -n -e "s/^PASS /PASS $1_/p" -e "s/^FAIL /FAIL $1_/p" -e "s/^SKIP /SKIP $1_/p" \
        -e "/^  /p" "$out"
}
run scalar NECTAR_NO_SIMD=1
case $(uname -m) in
x86_64 | amd64)
    run avx2 NECTAR_SIMD=avx2
    grep -q avx512f /proc/cpuinfo 2>/dev/null && run avx512 NECTAR_SIMD=avx512
    ;;
esac
rm -f "$out"
exit $status
