#!/bin/sh
# One pipeline, three backends: the cpu engine on a model folder, and the mil
# (MIL interpreter) and ane (the whole ANE request path on the fake device)
# engines on a bundle compiled here from it, give identical greedy text
# through `nectar run`, `nectar chat` (scripted stdin) and `nectar serve`
# ($NECTAR_BIN), on the demo model, an HF Qwen3 fixture and the two HF
# Qwen3.5 fixtures. The cpu text itself is
# HF's (tests/cli/test_run.sh, test_demo_reference.c), so equality here is
# equality with an independent reference. The server takes its sampling
# defaults from the folder's generation_config.json, as run does. Also: `bench --backend ane` on the
# fake device, and the real device off macOS is one line and exit 2.
BIN=${NECTAR_BIN:-build/nectar}
T="-t 1"
TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill $SPID 2>/dev/null; rm -rf "$TMP"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
export NECTAR_ANE_DEVICE= # the flag below decides

# One greedy chat request to the server on port $1 (extra JSON fields $2)
# into $3; a request that got no HTTP reply at all says so.
ask() {
    curl -s -m 600 "http://127.0.0.1:$1/v1/chat/completions" -H 'Content-Type: application/json' \
        -d '{"messages":[{"role":"user","content":"Hello"}],'"$2"'"max_tokens":16,"chat_template_kwargs":{"enable_thinking":false}}' \
        >"$3" 2>/dev/null || echo "  note: $4: no HTTP reply from the server on port $1 (curl exit $?)"
}

# serve: one chat request, greedy, on each backend; $1 names the model, $2
# is its folder, $3 the bundle compiled from it for context $4
serve_backends() {
    for b in cpu mil ane; do
        mdir="$3"
        [ $b = cpu ] && mdir=$2
        # the previous server's line must be gone before this one starts: the
        # redirection below truncates the file in the child, which may run
        # after the loop has read the old port (a refused connection)
        rm -f "$TMP/sout"
        "$BIN" serve $T --backend $b --ane-device fake -m "$mdir" --port 0 --parallel 2 --ctx $4 \
            >"$TMP/sout" 2>"$TMP/serr" &
        SPID=$!
        port=""
        i=0
        while [ $i -lt 1200 ] && [ -z "$port" ] && kill -0 $SPID 2>/dev/null; do
            port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)  slots.*|\1|p' "$TMP/sout" 2>/dev/null)
            [ -z "$port" ] && sleep 0.1
            i=$((i + 1))
        done
        ask "$port" '"temperature":0,' "$TMP/serve_$b.json" "$b"
        # no sampling fields: the folder's generation_config.json decides
        # (the tiny fixture says do_sample false: greedy, as run does)
        [ $b = cpu ] && ask "$port" "" "$TMP/serve_defaults.json" "$b defaults"
        cp "$TMP/serr" "$TMP/serr_$b"
        kill $SPID 2>/dev/null
        wait $SPID 2>/dev/null
        SPID=""
        sed -n 's|.*"content": *"\([^"]*\)".*|\1|p' "$TMP/serve_$b.json" >"$TMP/serve_$b"
    done
    if [ $1 = tiny_gqa2 ]; then
        sed -n 's|.*"content": *"\([^"]*\)".*|\1|p' "$TMP/serve_defaults.json" >"$TMP/serve_defaults"
        if [ -s "$TMP/serve_cpu" ] && cmp -s "$TMP/serve_cpu" "$TMP/serve_defaults"; then
            pass serve_sampling_defaults_from_generation_config
        else
            fail serve_sampling_defaults_from_generation_config "greedy '$(cat "$TMP/serve_cpu")' defaults '$(cat "$TMP/serve_defaults")'"
        fi
    fi
    if [ -s "$TMP/serve_cpu" ] && cmp -s "$TMP/serve_cpu" "$TMP/serve_mil" &&
        cmp -s "$TMP/serve_cpu" "$TMP/serve_ane" && grep -q '"finish_reason"' "$TMP/serve_ane.json"; then
        pass "serve_cpu_mil_ane_same_chat_answer_$1"
    else
        fail "serve_cpu_mil_ane_same_chat_answer_$1" "cpu $(cat "$TMP/serve_cpu.json") mil $(cat "$TMP/serve_mil.json") ane $(cat "$TMP/serve_ane.json") server stderr: cpu '$(tail -2 "$TMP/serr_cpu")' mil '$(tail -2 "$TMP/serr_mil")' ane '$(tail -2 "$TMP/serr_ane")'"
    fi
}

for m in demo tiny_gqa2; do
    dir=models/demo
    [ $m = tiny_gqa2 ] && dir=tests/fixtures/qwen3/tiny_gqa2
    if ! "$BIN" compile -m $dir -o "$TMP/$m.bundle" --buckets 32,64 --ctx 128 $T >/dev/null 2>"$TMP/err"; then
        fail "backends_compile_$m" "$(cat "$TMP/err")"
        continue
    fi
    # run: 40 greedy tokens (demo: no end-of-sequence before 64, see
    # tests/lower/test_lower_qwen3.c), the same text on every backend
    n=40
    "$BIN" run $T -m $dir -p "In the beginning" --temp 0 -n $n >"$TMP/run_cpu" 2>"$TMP/err_cpu"
    ok=1
    for b in mil ane; do
        "$BIN" run $T --backend $b --ane-device fake -m "$TMP/$m.bundle" -p "In the beginning" \
            --temp 0 -n $n >"$TMP/run_$b" 2>"$TMP/err_$b" || ok=0
        cmp -s "$TMP/run_cpu" "$TMP/run_$b" || ok=0
    done
    if [ $ok = 1 ] && [ -s "$TMP/run_cpu" ] && grep -q "generated $n tokens" "$TMP/err_ane"; then
        pass "run_cpu_mil_ane_same_greedy_text_$m"
    else
        fail "run_cpu_mil_ane_same_greedy_text_$m" "cpu '$(cat "$TMP/run_cpu")' mil '$(cat "$TMP/run_mil")' ane '$(cat "$TMP/run_ane")' $(tail -1 "$TMP/err_ane")"
    fi
    # chat: two scripted turns (the second reuses the cached prefix)
    printf 'Hello\nAnd then?\n' | "$BIN" chat $T -m $dir --no-think --temp 0 -n 12 >"$TMP/chat_cpu" 2>/dev/null
    ok=1
    for b in mil ane; do
        printf 'Hello\nAnd then?\n' | "$BIN" chat $T --backend $b --ane-device fake -m "$TMP/$m.bundle" \
            --no-think --temp 0 -n 12 >"$TMP/chat_$b" 2>"$TMP/err" || ok=0
        cmp -s "$TMP/chat_cpu" "$TMP/chat_$b" || ok=0
    done
    if [ $ok = 1 ] && [ "$(wc -l <"$TMP/chat_cpu")" -eq 2 ]; then
        pass "chat_cpu_mil_ane_same_replies_$m"
    else
        fail "chat_cpu_mil_ane_same_replies_$m" "cpu '$(cat "$TMP/chat_cpu")' mil '$(cat "$TMP/chat_mil")' ane '$(cat "$TMP/chat_ane")' $(tail -1 "$TMP/err")"
    fi
    serve_backends $m $dir "$TMP/$m.bundle" 128
done

# Qwen3.5 (hybrid linear/full attention): the qwen35-ane engine runs the
# same fp16 programs as qwen35-mil on the fake device (each linear layer's
# one-token or chunk mixer with its conv and delta states in surfaces), so
# its text is mil's; both are HF's (run_<i>.expected, written by
# tools/make_qwen35_fixtures.py) and the cpu backend's, on prompts of 4,
# 33 and 202 tokens (one bucket, two, several chunks)
for m in tiny_text_untied tiny_vl_tied; do
    dir=tests/fixtures/qwen35/$m
    if ! "$BIN" compile -m $dir -o "$TMP/$m.bundle" --buckets 32,64 --ctx 256 $T >/dev/null 2>"$TMP/err"; then
        fail "backends_compile_$m" "$(cat "$TMP/err")"
        continue
    fi
    for p in $dir/run_*.prompt; do
        r=$(basename "${p%.prompt}")
        "$BIN" run $T -m $dir -f "$p" --temp 0 -n 32 >"$TMP/run_cpu" 2>/dev/null
        ok=1
        for b in mil ane; do
            "$BIN" run $T --backend $b --ane-device fake -m "$TMP/$m.bundle" -f "$p" --temp 0 -n 32 \
                >"$TMP/run_$b" 2>"$TMP/err_$b" || ok=0
        done
        if [ $ok = 1 ] && [ -s "$TMP/run_ane" ] && cmp -s "$TMP/run_ane" "$TMP/run_mil" &&
            cmp -s "$TMP/run_ane" "${p%.prompt}.expected" && cmp -s "$TMP/run_ane" "$TMP/run_cpu"; then
            pass "run_qwen35_ane_equals_mil_hf_cpu_${m}_$r"
        else
            fail "run_qwen35_ane_equals_mil_hf_cpu_${m}_$r" "ane '$(cat "$TMP/run_ane")' mil '$(cat "$TMP/run_mil")' $(tail -1 "$TMP/err_ane")"
        fi
    done
    # two turns: the second reuses the first's prefix (the engine truncates,
    # resets the recurrent states and replays the kept tokens): ane = mil;
    # = cpu on tiny_vl_tied (tiny_text_untied's second reply has a top-2
    # margin that fp16 flips: docs/qwen35.md)
    printf 'hello there\nand again\n' | "$BIN" chat $T -m $dir --no-think --temp 0 -n 12 >"$TMP/chat_cpu" 2>/dev/null
    ok=1
    for b in mil ane; do
        printf 'hello there\nand again\n' | "$BIN" chat $T --backend $b --ane-device fake \
            -m "$TMP/$m.bundle" --no-think --temp 0 -n 12 >"$TMP/chat_$b" 2>"$TMP/err_$b" || ok=0
    done
    cmp -s "$TMP/chat_mil" "$TMP/chat_ane" || ok=0
    [ $m = tiny_vl_tied ] && ! cmp -s "$TMP/chat_cpu" "$TMP/chat_ane" && ok=0
    if [ $ok = 1 ] && [ "$(wc -l <"$TMP/chat_ane")" -eq 2 ] && grep -q "cached" "$TMP/err_ane"; then
        pass "chat_qwen35_two_turns_ane_equals_mil_$m"
    else
        fail "chat_qwen35_two_turns_ane_equals_mil_$m" "cpu '$(cat "$TMP/chat_cpu")' mil '$(cat "$TMP/chat_mil")' ane '$(cat "$TMP/chat_ane")' $(tail -1 "$TMP/err_ane")"
    fi
done
[ -d "$TMP/tiny_text_untied.bundle" ] && serve_backends tiny_text_untied tests/fixtures/qwen35/tiny_text_untied "$TMP/tiny_text_untied.bundle" 256

# bench on the fake device: prompt and generation speed through the same seam
if [ -d "$TMP/demo.bundle" ] &&
    "$BIN" bench $T --backend ane --ane-device fake -m "$TMP/demo.bundle" -p 32 -n 4 --runs 1 \
        >"$TMP/out" 2>"$TMP/err" && grep -q "qwen3-ane (fake device) engine" "$TMP/out" &&
    grep -q "^| pp32 " "$TMP/out" && grep -q "^| tg4 " "$TMP/out"; then
    pass bench_ane_fake_device
else fail bench_ane_fake_device "$(cat "$TMP/out" "$TMP/err")"; fi

if [ -d "$TMP/tiny_vl_tied.bundle" ] &&
    "$BIN" bench $T --backend ane --ane-device fake -m "$TMP/tiny_vl_tied.bundle" -p 32 -n 4 --runs 1 \
        >"$TMP/out" 2>"$TMP/err" && grep -q "qwen35-ane (fake device) engine" "$TMP/out" &&
    grep -q "^| tg4 " "$TMP/out"; then
    pass bench_qwen35_ane_fake_device
else fail bench_qwen35_ane_fake_device "$(cat "$TMP/out" "$TMP/err")"; fi

# the real device where there is none: one line, exit 2
if [ "$(uname -s)" != Darwin ] && [ -d "$TMP/demo.bundle" ]; then
    "$BIN" run --backend ane --ane-device real -m "$TMP/demo.bundle" -p hi -n 1 >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "macOS" "$TMP/err"; then
        pass run_ane_real_off_macos_is_one_line_exit_2
    else fail run_ane_real_off_macos_is_one_line_exit_2 "rc $rc: $(cat "$TMP/err")"; fi
    if [ -d "$TMP/tiny_vl_tied.bundle" ]; then
        "$BIN" run --backend ane --ane-device real -m "$TMP/tiny_vl_tied.bundle" -p hi -n 1 >"$TMP/out" 2>"$TMP/err"
        rc=$?
        if [ $rc -eq 2 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "macOS" "$TMP/err"; then
            pass run_qwen35_ane_real_off_macos_is_one_line_exit_2
        else fail run_qwen35_ane_real_off_macos_is_one_line_exit_2 "rc $rc: $(cat "$TMP/err")"; fi
    fi
    NECTAR_ANE_DEVICE=bogus "$BIN" run --backend ane -m "$TMP/demo.bundle" -p hi -n 1 >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "NECTAR_ANE_DEVICE" "$TMP/err"; then
        pass run_bad_ane_device_env_is_one_line
    else fail run_bad_ane_device_env_is_one_line "rc $rc: $(cat "$TMP/err")"; fi
else
    echo "SKIP run_ane_real_off_macos_is_one_line_exit_2: macOS (or no bundle)"
fi
