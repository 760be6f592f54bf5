#!/bin/sh
# The arm64 NEON kernels on an x86-64 machine: cross-compile the kernel tests
# (float and quantized kernels, fp16 cache kernels, attention) with the
# src/cpu sources for aarch64 and run them under qemu-aarch64, so the NEON
# tables are checked against the double references here too. Each runs on
# three emulated CPUs: max (dotprod, i8mm and bf16: every table and the
# bfmmla GEMM), cortex-a76 (dotprod only) and cortex-a53 (armv8.0: the
# baseline table alone; attention, which has no per-extension kernels, only
# on max), which also checks that the run-time detection (HWCAP bits) offers each table
# only where the CPU has it. Skips without the cross compiler or qemu (and
# on arm64 itself, where the normal suite runs the tables the CPU has).
CC_A64=${AARCH64_CC:-aarch64-linux-gnu-gcc}
# The cross-built binaries carry no sanitizer: the sanitized pass of the
# suite would run the very same programs again (minutes under qemu).
if [ -n "$NECTAR_SANITIZED" ]; then
    echo "SKIP neon_qemu: unsanitized cross build, already run in the plain pass"; exit 0
fi
case $(uname -m) in aarch64|arm64) echo "SKIP neon_qemu: native arm64 runs the kernels directly"; exit 0 ;; esac
if ! command -v "$CC_A64" >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
    echo "SKIP neon_qemu: needs $CC_A64 and qemu-aarch64"; exit 0
fi
T=${NECTAR_BUILD:-build}/tmp/test_neon_qemu.$$
mkdir -p "$T/obj"
trap 'rm -rf "$T"' EXIT
CFLAGS_A64="-O1 -std=c11 -Wall -Wextra -Werror -Wno-format-truncation -Iinclude -Isrc \
    -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE"
# every portable and NEON file of src/cpu (not the x86-64 ones) and the base
# they use, each with the Makefile's flags for its name
SRC="$(ls src/cpu/*.c | grep -v -e '_avx2\.c$' -e '_avx512\.c$' -e '_amx\.c$' | tr '\n' ' ')
     src/base/pool.c src/base/error.c src/base/half.c src/base/alloc.c src/base/timer.c src/base/log.c
     src/io/weights_residency.c
     tests/common/harness.c tests/common/weights.c"
OBJ=
for f in $SRC; do
    case $f in
    *_dotprod_neon.c) isa=-march=armv8.2-a+dotprod ;;
    *_i8mm_neon.c) isa=-march=armv8.2-a+dotprod+i8mm ;;
    *_bf16_neon.c) isa=-march=armv8.2-a+bf16 ;;
    *) isa= ;;
    esac
    o=$T/obj/$(echo "$f" | tr / _).o
    if ! $CC_A64 $CFLAGS_A64 $isa -c "$f" -o "$o" 2>"$T/err"; then
        echo "FAIL neon_build: $f"; head -20 "$T/err"; exit 1
    fi
    OBJ="$OBJ $o"
done
status=0
for t in test_kernels test_quant_kernels test_attention test_rows test_conv1d; do
    if ! $CC_A64 $CFLAGS_A64 -static -o "$T/$t" tests/cpu/$t.c $OBJ -lm -lpthread 2>"$T/err"; then
        echo "FAIL neon_build_$t:"; head -20 "$T/err"; status=1; continue
    fi
    # cpu: the tables its run must list (cpu_kernels_available), and must not;
    # attention, the row kernels and the conv have no per-extension kernels: max alone
    cpus="max:neon-i8mm: cortex-a76:neon-dotprod:neon-i8mm cortex-a53:neon:neon-dotprod"
    case $t in test_attention | test_rows | test_conv1d) cpus=max:neon: ;; esac
    for cpu in $cpus; do
        model=${cpu%%:*} want=$(echo "$cpu" | cut -d: -f2) absent=$(echo "$cpu" | cut -d: -f3)
        if ! qemu-aarch64 -cpu help | grep -qw -- "$model"; then
            echo "SKIP neon_${model}_$t: this qemu-aarch64 has no $model CPU"; continue
        fi
        qemu-aarch64 -cpu "$model" "$T/$t" >"$T/out" 2>&1 || status=1
        grep -q "neon" "$T/out" || { echo "FAIL neon_${model}_$t: the NEON table did not run"; status=1; }
        if [ "$t" = test_quant_kernels ]; then
            grep -q "tables (.*$want" "$T/out" ||
                { echo "FAIL neon_${model}_tables: $want not offered"; status=1; }
            if [ -n "$absent" ] && grep -q "tables (.*$absent" "$T/out"; then
                echo "FAIL neon_${model}_tables: $absent offered on a CPU without it"; status=1
            fi
        fi
        sed -n -e "s/^PASS /PASS neon_${model}_/p" -e "s/^FAIL /FAIL neon_${model}_/p" \
            -e "s/^SKIP /SKIP neon_${model}_/p" -e "s/^  /  /p" "$T/out"
    done
done
exit $status
