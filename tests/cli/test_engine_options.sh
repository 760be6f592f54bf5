#!/bin/sh
# The engine options reach the engine by one route on every command that
# opens a decoder ($NECTAR_BIN): --kv means the same on run, chat, serve and
# bench; an option's environment variable (NECTAR_KV) gives the same engine
# as its flag, and the flag wins over it; a bad value is one line naming the
# flag (or the variable), exit 2, nothing on stdout. What the engine got is
# read off its NECTAR_LOG=debug line ("fp16 KV cache") and bench's model line,
# and checked against serve's startup line, whose KV cache size halves.
BIN=${NECTAR_BIN:-build/nectar}
M=tests/fixtures/qwen3/tiny_gqa2
TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill $SPID 2>/dev/null; rm -rf "$TMP"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# The KV type the engine opened with for command $1 (run|chat|serve|bench)
# given env assignments and extra flags: "fp16", "fp32" or what went wrong.
kv_of() { # cmd "ENV=.. ..." flags...
    cmd=$1 envs=$2
    shift 2
    case $cmd in
    run) env NECTAR_LOG=debug $envs "$BIN" run -m $M -p hi -n 1 "$@" 2>&1 >/dev/null ;;
    chat) echo hi | env NECTAR_LOG=debug $envs "$BIN" chat -m $M -n 1 "$@" 2>&1 >/dev/null ;;
    bench) env $envs "$BIN" bench -m $M -p 4 -n 1 --runs 1 -t 1 "$@" 2>&1 ;;
    serve)
        rm -f "$TMP/sout"
        env NECTAR_LOG=debug $envs "$BIN" serve -m $M --port 0 --parallel 1 --ctx 64 "$@" \
            >"$TMP/sout" 2>"$TMP/serr" &
        SPID=$!
        i=0
        while [ $i -lt 300 ] && ! grep -q "KV cache" "$TMP/sout" 2>/dev/null &&
            kill -0 $SPID 2>/dev/null; do
            sleep 0.1
            i=$((i + 1))
        done
        kill $SPID 2>/dev/null
        wait $SPID 2>/dev/null
        SPID=""
        cat "$TMP/serr" "$TMP/sout"
        ;;
    esac | sed -n 's/.*\(fp16\|fp32\) KV cache.*/\1/p' | head -1
}

check() { # name want cmd envs flags...
    name=$1 want=$2
    shift 2
    got=$(kv_of "$@")
    if [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "want $want, got '$got'"; fi
}

for cmd in run chat serve bench; do
    check ${cmd}_kv_default_is_fp32 fp32 $cmd ""
    check ${cmd}_kv_f16_flag fp16 $cmd "" --kv f16
    check ${cmd}_kv_f32_flag fp32 $cmd "" --kv f32
    check ${cmd}_kv_env_same_as_flag fp16 $cmd "NECTAR_KV=f16"
    check ${cmd}_kv_flag_wins_over_env fp32 $cmd "NECTAR_KV=f16" --kv f32
done

# serve's startup line: the KV cache of fp16 is half that of fp32
mib() { sed -n 's/.*KV cache \([0-9]*\) MiB.*/\1/p' "$TMP/sout"; }
kv_of serve "" --kv f32 --parallel 64 --ctx 256 >/dev/null
m32=$(mib)
kv_of serve "" --kv f16 --parallel 64 --ctx 256 >/dev/null
m16=$(mib)
if [ -n "$m32" ] && [ -n "$m16" ] && [ "$m16" -gt 0 ] && [ $((m16 * 2)) -le $((m32 + 1)) ] &&
    [ $((m16 * 2)) -ge $((m32 - 1)) ]; then
    pass serve_kv_f16_halves_the_cache
else fail serve_kv_f16_halves_the_cache "f32 $m32 MiB, f16 $m16 MiB"; fi

# bad values: one line naming the flag or the variable, exit 2, no stdout
bad() { # name "pattern" envs cmd args...
    name=$1 pat=$2 envs=$3
    shift 3
    env $envs "$BIN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    if [ $rc -eq 2 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
        grep -q -- "$pat" "$TMP/err"; then
        pass "$name"
    else fail "$name" "rc $rc: $(cat "$TMP/err")"; fi
}
for cmd in run chat serve bench; do
    p=""
    [ $cmd = run ] && p="-p hi"
    bad ${cmd}_bad_kv_names_the_flag "^nectar $cmd: --kv: 'f8' is not one of f32|f16" "" \
        $cmd -m $M $p --kv f8
    bad ${cmd}_bad_backend_names_the_flag "^nectar $cmd: --backend: 'gpu' is not one of cpu|mil|ane" \
        "" $cmd -m $M --backend gpu
done
bad run_bad_kv_env_names_the_variable "^nectar: NECTAR_KV: 'f8' is not one of f32|f16" \
    NECTAR_KV=f8 run -m $M -p hi
bad run_bad_ane_device_names_the_flag "^nectar run: --ane-device: 'gpu' is not an ANE device" "" \
    run -m $M -p hi --backend ane --ane-device gpu
bad embed_bad_ane_device_names_the_flag "^nectar embed: --ane-device: 'gpu' is not an ANE device" \
    "" embed -m tests/fixtures/modernbert/mb_mlm -p hi --backend ane --ane-device gpu
