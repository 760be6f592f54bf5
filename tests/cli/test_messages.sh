#!/bin/sh
# The messages a new user meets (issue 27): each wrong use gets one line
# that says what to do, no internal function name; `nectar help CMD`;
# test-only options out of --help; compile's -c; --json on the encoder
# commands; build summaries on stderr (stdout stays for results).
. "$(dirname "$0")/../common/sh_test.sh"
DEMO=models/demo
ENC=tests/fixtures/modernbert/mb_mlm

# check NAME WANT_RC PATTERN ARGS...: exit WANT_RC, stderr one line matching PATTERN
check() {
    name=$1 want=$2 pat=$3; shift 3
    "$BIN" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq "$want" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -Eq -- "$pat" "$TMP/err"; then
        pass "$name"
    else fail "$name" "exit $rc: $(cat "$TMP/err")"; fi
}

check msg_mil_on_a_folder_says_compile 1 "models/demo: not a bundle .*run nectar compile" \
    run --backend mil -m $DEMO -p hi -n 2
if grep -q "manifest.json" "$TMP/err"; then fail msg_mil_on_a_folder_no_missing_file "$(cat "$TMP/err")"
else pass msg_mil_on_a_folder_no_missing_file; fi

check msg_run_encoder_says_use_embed 1 "is an encoder: .*nectar embed" run -m $ENC -p hi -n 2
if grep -q "nc_" "$TMP/err"; then fail msg_run_encoder_no_internal_name "$(cat "$TMP/err")"
else pass msg_run_encoder_no_internal_name; fi

"$BIN" quantize -m $DEMO --type q8 -o "$TMP/q8" >"$TMP/out" 2>"$TMP/err"
if [ ! -s "$TMP/out" ] && grep -q "matrices as q8" "$TMP/err"; then pass quantize_summary_on_stderr
else fail quantize_summary_on_stderr "stdout '$(cat "$TMP/out")'"; fi
check msg_compile_quantized_folder 1 "q8: quantized folders cannot be compiled" \
    compile -m "$TMP/q8" -o "$TMP/b"
[ -e "$TMP/b" ] && fail compile_quantized_leaves_nothing "$TMP/b exists"

# compile -c is --ctx; its summary goes to stderr
if "$BIN" compile -m $DEMO -c 64 --buckets 32 -t 2 -o "$TMP/b64" >"$TMP/out" 2>"$TMP/err" &&
    [ ! -s "$TMP/out" ] && grep -q "ctx 64" "$TMP/err" &&
    [ "$(jq .plan.ctx "$TMP/b64/manifest.json")" = 64 ]; then
    pass compile_c_is_ctx_summary_on_stderr
else fail compile_c_is_ctx_summary_on_stderr "stdout '$(cat "$TMP/out")' stderr '$(cat "$TMP/err")'"; fi

# nectar help CMD = nectar CMD --help
"$BIN" help run >"$TMP/h1" 2>&1
"$BIN" run --help >"$TMP/h2" 2>&1
if head -1 "$TMP/h1" | grep -q "^usage: nectar run " && cmp -s "$TMP/h1" "$TMP/h2"; then pass help_cmd_prints_its_help
else fail help_cmd_prints_its_help "$(head -2 "$TMP/h1")"; fi
check help_unknown_command 2 "^nectar: unknown command 'nope'$" help nope

# --fake-engine: out of serve --help, still accepted (a missing folder is
# then the error, not an unknown option)
if "$BIN" serve --help | grep -q -- "--fake"; then fail serve_help_hides_test_options "listed"
else pass serve_help_hides_test_options; fi
check serve_fake_engine_still_accepted 1 "$TMP/none" serve --fake-engine -m "$TMP/none" --port 1

# --json is the JSON spelling everywhere; --format json stays
for c in fill-mask classify; do
    m=$ENC; [ $c = classify ] && m=tests/fixtures/modernbert/mm_cls
    p="The capital of France is [MASK]."; [ $c = classify ] && p="hello"
    if "$BIN" $c -m $m -p "$p" --json >"$TMP/a" 2>/dev/null &&
        "$BIN" $c -m $m -p "$p" --format json >"$TMP/b" 2>/dev/null &&
        jq -e . "$TMP/a" >/dev/null && cmp -s "$TMP/a" "$TMP/b"; then pass "${c}_json_flag"
    else fail "${c}_json_flag" "$(head -c 200 "$TMP/a")"; fi
done
