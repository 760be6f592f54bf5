#!/bin/sh
# Speculative decoding from the command line, the server and Python: greedy
# output with --draft is the target's own, byte for byte. References: HF's
# greedy text for the Qwen3.5 fixtures (run_<i>.expected, from
# tools/make_qwen35_fixtures.py), the draft being a q8 copy of the target or
# another model of the same tokenizer that the target rejects nearly always
# (its recurrent state rolled back each step); on models/demo with a q4
# copy as the draft (or a bundle of it on the fake ANE device), the same
# command without --draft (run, chat, serve, the Python package). Bad drafts are one line and a non-zero exit.
BIN=${NECTAR_BIN:-build/nectar}
T="-t 1"
TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill $SPID 2>/dev/null; rm -rf "$TMP"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
DEMO=models/demo

"$BIN" quantize -m $DEMO -o "$TMP/demo_q4" --type q4 >/dev/null 2>"$TMP/err" ||
    { fail speculative_quantize "$(cat "$TMP/err")"; exit 1; }

# run: HF's greedy text with a draft (Qwen3.5)
A=tests/fixtures/qwen35/tiny_text_untied
B=tests/fixtures/qwen35/tiny_vl_tied
"$BIN" quantize -m $A -o "$TMP/a_q8" --type q8 >/dev/null 2>&1
for pair in "$A:$TMP/a_q8" "$B:$A"; do
    m=${pair%%:*}
    d=${pair#*:}
    for p in "$m"/run_*.prompt; do
        e=${p%.prompt}.expected
        name=$(basename "$m")_$(basename "${p%.prompt}")_draft_$(basename "$d")
        if "$BIN" run $T -m "$m" -f "$p" --temp 0 -n 32 --draft "$d" --draft-max 5 \
            >"$TMP/out" 2>"$TMP/err" && cmp -s "$TMP/out" "$e" && grep -q "draft .* proposed" "$TMP/err"; then
            pass "speculative_run_matches_hf_$name"
        else
            fail "speculative_run_matches_hf_$name" "got '$(cat "$TMP/out")' expected '$(cat "$e")' ($(tail -1 "$TMP/err"))"
        fi
    done
done

# run on the demo model: the same bytes as without a draft, for several --draft-max
P="And the LORD said unto Moses,"
"$BIN" run $T -m $DEMO -p "$P" --temp 0 -n 120 >"$TMP/plain" 2>"$TMP/err" ||
    fail speculative_run_plain "$(cat "$TMP/err")"
ok=1
for k in 1 3 16; do
    "$BIN" run $T -m $DEMO -p "$P" --temp 0 -n 120 --draft "$TMP/demo_q4" --draft-max $k \
        >"$TMP/spec" 2>"$TMP/err" && cmp -s "$TMP/plain" "$TMP/spec" || { ok=0; break; }
done
if [ $ok = 1 ] && grep -q "generated 120 tokens" "$TMP/err" &&
    grep -q "draft [0-9]* proposed, [0-9]* accepted" "$TMP/err"; then
    pass speculative_run_demo_same_bytes
else fail speculative_run_demo_same_bytes "--draft-max $k: '$(cat "$TMP/spec")' vs '$(cat "$TMP/plain")' ($(tail -1 "$TMP/err"))"; fi

# the draft on the fake ANE device (a bundle of the demo model, fp16), the
# target on the CPU
export NECTAR_ANE_DEVICE=
if "$BIN" compile -m $DEMO -o "$TMP/bundle" --ctx 256 >/dev/null 2>"$TMP/err" &&
    "$BIN" run $T -m $DEMO -p "$P" --temp 0 -n 120 --draft "$TMP/bundle" --draft-backend ane \
        --ane-device fake --draft-max 4 >"$TMP/spec" 2>"$TMP/err" &&
    cmp -s "$TMP/plain" "$TMP/spec" && grep -q "draft [1-9][0-9]* proposed" "$TMP/err"; then
    pass speculative_run_draft_on_fake_ane_same_bytes
else fail speculative_run_draft_on_fake_ane_same_bytes "'$(cat "$TMP/spec")' ($(tail -1 "$TMP/err"))"; fi

# chat: two turns (the second reuses the first's cache, the draft's too)
printf 'Who made the heaven?\nAnd the earth?\n' >"$TMP/turns"
"$BIN" chat $T -m $DEMO --temp 0 -n 40 --no-think <"$TMP/turns" >"$TMP/plain" 2>/dev/null
if "$BIN" chat $T -m $DEMO --temp 0 -n 40 --no-think --draft "$TMP/demo_q4" <"$TMP/turns" \
    >"$TMP/spec" 2>"$TMP/err" && cmp -s "$TMP/plain" "$TMP/spec" && [ -s "$TMP/spec" ] &&
    [ "$(grep -c 'draft .* proposed' "$TMP/err")" = 2 ]; then
    pass speculative_chat_same_replies
else fail speculative_chat_same_replies "'$(cat "$TMP/spec")' vs '$(cat "$TMP/plain")' ($(cat "$TMP/err"))"; fi

# serve: a greedy completion's text with and without --draft (and /metrics
# counting the draft's proposals)
complete() { # port, output file
    curl -s -m 300 "http://127.0.0.1:$1/v1/completions" -H 'Content-Type: application/json' \
        -d '{"prompt":"In the beginning","max_tokens":60,"temperature":0}' >"$2" 2>/dev/null
}
serve_text() { # output file, extra serve arguments...
    out=$1
    shift
    rm -f "$TMP/sout"
    "$BIN" serve $T -m $DEMO --port 0 --parallel 2 --ctx 512 "$@" >"$TMP/sout" 2>"$TMP/serr" &
    SPID=$!
    port=""
    i=0
    while [ $i -lt 100 ] && [ -z "$port" ]; do
        port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$TMP/sout" 2>/dev/null)
        [ -z "$port" ] && sleep 0.1
        i=$((i + 1))
    done
    [ -n "$port" ] && complete "$port" "$out" &&
        curl -s -m 60 "http://127.0.0.1:$port/metrics" >"$out.metrics" 2>/dev/null
    kill $SPID 2>/dev/null
    wait $SPID
    src=$?
    SPID=""
    return $src
}
if command -v curl >/dev/null 2>&1; then
    serve_text "$TMP/s_plain" && serve_text "$TMP/s_spec" --draft "$TMP/demo_q4" --draft-max 6
    src=$?
    t1=$(sed -n 's/.*"text":"\([^"]*\)".*/\1/p' "$TMP/s_plain")
    t2=$(sed -n 's/.*"text":"\([^"]*\)".*/\1/p' "$TMP/s_spec")
    if [ $src = 0 ] && [ -n "$t1" ] && [ "$t1" = "$t2" ] &&
        grep -q '^nectar_draft_tokens_total [1-9]' "$TMP/s_spec.metrics" &&
        grep -q '^nectar_draft_tokens_total 0' "$TMP/s_plain.metrics"; then
        pass speculative_serve_same_text
    else fail speculative_serve_same_text "exit $src: '$t2' vs '$t1' ($(tail -2 "$TMP/serr"))"; fi
else
    echo "SKIP speculative_serve_same_text: no curl"
fi

# Python: Model(..., draft=DIR, draft_max=N) (the regular library build)
LIB=${NECTAR_BUILD:-build}/libnectar.so
if command -v python3 >/dev/null 2>&1 && [ -f build/libnectar.so ]; then
    if NECTAR_LIBRARY=build/libnectar.so PYTHONPATH=python python3 - "$DEMO" "$TMP/demo_q4" \
        >"$TMP/py" 2>&1 <<'EOF'
import sys
import nectar
target, draft = sys.argv[1], sys.argv[2]
with nectar.Model(target, threads=1) as m:
    a = m.generate("In the beginning", max_tokens=50, temperature=0)
with nectar.Model(target, threads=1, draft=draft, draft_max=4) as m:
    b = m.generate("In the beginning", max_tokens=50, temperature=0)
assert a and a == b, (a, b)
print("same")
EOF
    then pass speculative_python_same_text
    else fail speculative_python_same_text "$(tail -3 "$TMP/py")"; fi
else
    echo "SKIP speculative_python_same_text: no python3 or $LIB"
fi

# bad drafts: one line, non-zero exit, nothing on stdout
"$BIN" run $T -m $DEMO -p x --draft $A >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q "share the target's tokenizer" "$TMP/err" &&
    [ ! -s "$TMP/out" ]; then
    pass speculative_other_tokenizer_is_one_line
else fail speculative_other_tokenizer_is_one_line "exit $rc: $(cat "$TMP/err")"; fi
"$BIN" run $T -m $DEMO -p x --draft "$TMP/demo_q4" --draft-max 0 >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc = 2 ] && grep -q -- "--draft-max" "$TMP/err"; then pass speculative_draft_max_0_is_a_usage_error
else fail speculative_draft_max_0_is_a_usage_error "exit $rc: $(cat "$TMP/err")"; fi
"$BIN" run $T -m $DEMO -p x --draft "$TMP/nowhere" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q "nowhere" "$TMP/err"; then
    pass speculative_missing_draft_is_one_line
else fail speculative_missing_draft_is_one_line "exit $rc: $(cat "$TMP/err")"; fi
# a target on a bundle engine cannot verify in one step: one line, exit 1
"$BIN" run $T --backend mil -m "$TMP/bundle" -p x --draft $DEMO >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q "needs a target on the cpu backend" "$TMP/err"; then
    pass speculative_bundle_target_is_one_line
else fail speculative_bundle_target_is_one_line "exit $rc: $(cat "$TMP/err")"; fi
