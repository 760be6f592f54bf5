#!/bin/sh
# The arm64 NEON kernels on an x86-64 machine: cross-compile the kernel tests
# (float and quantized kernels, fp16 cache kernels, attention) with the
# src/cpu sources for aarch64 and run them under qemu-aarch64, so the NEON
# table is checked against the scalar one here too. Skips without the cross
# compiler or qemu (and on arm64 itself, where the normal suite runs NEON
# natively).
CC_A64=${AARCH64_CC:-aarch64-linux-gnu-gcc}
case $(uname -m) in aarch64|arm64) echo "SKIP neon_qemu: native arm64 runs the kernels directly"; exit 0 ;; esac
if ! command -v "$CC_A64" >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
    echo "SKIP neon_qemu: needs $CC_A64 and qemu-aarch64"; exit 0
fi
T=${NECTAR_BUILD:-build}/tmp/test_neon_qemu.$$
mkdir -p "$T"
# every portable and NEON file of src/cpu (not the x86-64 ones) and the base they use
SRC="$(ls src/cpu/*.c | grep -v -e '_avx2\.c$' -e '_avx512\.c$' -e '_amx\.c$' | tr '\n' ' ')
     src/base/pool.c src/base/error.c src/base/half.c src/base/alloc.c src/base/timer.c
     tests/common/harness.c tests/common/weights.c"
status=0
for t in test_kernels test_quant_kernels test_attention; do
    if ! "$CC_A64" -static -O1 -std=c11 -Wall -Wextra -Werror -Wno-format-truncation -Iinclude \
        -Isrc -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -o "$T/$t" tests/cpu/$t.c $SRC \
        -lm -lpthread 2>"$T/err"; then
        echo "FAIL neon_build_$t:"; head -20 "$T/err"; status=1; continue
    fi
    qemu-aarch64 "$T/$t" >"$T/out" 2>&1 || status=1
    grep -q "neon" "$T/out" || { echo "FAIL neon_$t: the NEON table did not run"; status=1; }
    sed -n -e "s/^PASS /PASS neon_/p" -e "s/^FAIL /FAIL neon_/p" -e "s/^SKIP /SKIP neon_/p" \
        -e "s/^  /  /p" "$T/out"
done
rm -rf "$T"
exit $status
