#!/bin/sh
# The environment variables `nectar` ($NECTAR_BIN) reads once at start
# (tools/nectar/cli_env.c) reach the library as options: the kernel table
# (NECTAR_NO_SIMD, NECTAR_SIMD, NECTAR_NO_AMX, NECTAR_BF16) and the KV cache type
# (NECTAR_KV), read off `nectar bench`'s model line; a bad value is one line,
# exit 2. The library itself calls no getenv (checked on the sources).
. "$(dirname "$0")/../common/sh_test.sh"
M=tests/fixtures/qwen3/tiny_gqa2

model_line() { # env assignments...: the "model ..." line of a tiny bench
    env "$@" "$BIN" bench -m $M -p 8 -n 2 --runs 1 -t 1 2>&1 | grep '^model '
}

check() { # name, expected text in the model line, env assignments...
    name=$1 want=$2
    shift 2
    line=$(model_line "$@")
    case "$line" in
    *"$want"*) pass "$name" ;;
    *) fail "$name" "want '$want' in '$line'" ;;
    esac
}

check env_no_simd_picks_scalar "scalar kernels" NECTAR_NO_SIMD=1
check env_simd_scalar_picks_scalar "scalar kernels" NECTAR_SIMD=scalar
check env_kv_f16_reaches_the_model "fp16 KV cache" NECTAR_KV=f16
check env_kv_default_fp32 "fp32 KV cache" NECTAR_KV=
best=$(model_line | sed -n 's/.* \([a-z0-9]*\) kernels.*/\1/p')
case "$best" in
amx)
    check env_no_amx_caps_at_avx512 "avx512 kernels" NECTAR_NO_AMX=1
    check env_simd_avx2_caps "avx2 kernels" NECTAR_SIMD=avx2
    ;;
avx512) check env_simd_avx2_caps "avx2 kernels" NECTAR_SIMD=avx2 ;;
*) echo "SKIP env_simd_caps: the best table here is $best" ;;
esac

for bad in NECTAR_SIMD=sse4 NECTAR_KV=f8 NECTAR_LOG=loud NECTAR_BF16=half NECTAR_WEIGHTS=huge; do
    env "$bad" "$BIN" bench -m $M -p 8 -n 2 --runs 1 >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^nectar: ${bad%%=*}: '${bad#*=}' is not" "$TMP/err"; then
        pass "env_bad_${bad%%=*}_one_line_exit_2"
    else fail "env_bad_${bad%%=*}_one_line_exit_2" "exit $rc: $(cat "$TMP/err")"; fi
done

# below tools/ nothing reads the environment but what the OS defines: PATH
# (finding gnuplot), the caches' places: the ANE staging cache
# (NECTAR_ANE_CACHE, XDG_CACHE_HOME, TMPDIR in src/ane_host/ane_stage.c) and
# the compile ladder's profile (NECTAR_ANE_PROFILE, src/ane_host/ane_ladder.c),
# both their callers' to pass down later, and the Hugging Face hub cache a
# model id is looked up in, placed as huggingface_hub places it (HF_HUB_CACHE,
# HF_HOME, XDG_CACHE_HOME, HOME in src/api/api_hub.c), and the kernel
# wisdom file nc_model_open uses as the command line does (NECTAR_WISDOM,
# XDG_CACHE_HOME, HOME in src/api/api_wisdom.c)
left=$(grep -rn 'getenv(' src/ | grep -v '^src/bench/report.c:.*"PATH"' |
    grep -v '^src/ane_host/ane_stage.c:' | grep -v '^src/ane_host/ane_ladder.c:.*"NECTAR_ANE_PROFILE"' |
    grep -v '^src/api/api_hub.c:' | grep -v '^src/api/api_wisdom.c:' || true)
if [ -z "$left" ]; then pass library_reads_no_environment; else fail library_reads_no_environment "$left"; fi
