#!/bin/sh
# The tests that exercise the CPU kernels again with SIMD disabled
# (NECTAR_NO_SIMD=1: the scalar reference table everywhere, the portable
# fallback an arm64 or old x86 machine without the wide ISAs would run):
# kernels, the bandwidth probe's loops, quantized formats and their
# accuracy against HF, the Qwen3 engine through generation, the demo model
# and the server engine. Each PASS/FAIL/SKIP line is prefixed with "nosimd_".
B=${NECTAR_BUILD:-build}/tests
status=0
out=$(mktemp)
for t in cpu/test_kernels cpu/test_cpu_membw cpu/test_quant_kernels quant/test_quant_accuracy \
    models/test_qwen3_bad_input gen/test_generate cli/test_demo_reference serve/test_serve_qwen3; do
    if [ ! -x "$B/$t" ]; then echo "SKIP nosimd_$(basename $t): $B/$t not built"; continue; fi
    NECTAR_NO_SIMD=1 "$B/$t" >"$out" 2>&1 || status=1
    sed -n -e "s/^PASS /PASS nosimd_/p" -e "s/^FAIL /FAIL nosimd_/p" -e "s/^SKIP /SKIP nosimd_/p" \
        -e "s/^  /  /p" "$out"
done
rm -f "$out"
exit $status
