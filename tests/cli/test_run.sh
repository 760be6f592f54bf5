#!/bin/sh
# End-to-end `nectar run` ($NECTAR_BIN) on the tiny random Qwen3 checkpoints:
# greedy output byte-identical to HF transformers' (tests/fixtures/gen/e2e,
# written by tools/make_gen_fixtures.py), seeds, stop strings, context
# overflow, and one-line errors for bad input. The demo model is checked
# against its reference.json by tests/cli/test_demo_reference.c.
. "$(dirname "$0")/../common/sh_test.sh"
# one thread: the tiny models gain nothing from more, and the run stays
# independent of the machine (the thread pool has its own tests)
T="-t 1"
FIX=tests/fixtures/gen/e2e

# greedy continuation == HF's, for every fixture prompt
for p in "$FIX"/run_*.prompt; do
    base=${p%.prompt}
    name=$(basename "$base")
    model=$(echo "$name" | sed 's/^run_//; s/_[0-9]*$//')
    if "$BIN" run $T -m "tests/fixtures/qwen3/$model" -f "$p" --temp 0 -n 24 >"$TMP/out" 2>"$TMP/err" &&
        cmp -s "$TMP/out" "$base.expected"; then
        pass "run_greedy_matches_hf_$name"
    else
        fail "run_greedy_matches_hf_$name" "got '$(cat "$TMP/out")' expected '$(cat "$base.expected")' ($(tail -1 "$TMP/err"))"
    fi
done

M=tests/fixtures/qwen3/tiny_gqa2
P="$FIX/run_tiny_gqa2_0.prompt"
E="$FIX/run_tiny_gqa2_0.expected"

# the thread count does not change the text (default: all cores)
if "$BIN" run -m "$M" -f "$P" --temp 0 -n 24 -t 2 >"$TMP/out" 2>/dev/null && cmp -s "$TMP/out" "$E" &&
    "$BIN" run -m "$M" -f "$P" --temp 0 -n 24 >"$TMP/out" 2>/dev/null && cmp -s "$TMP/out" "$E"; then
    pass run_greedy_same_with_threads
else fail run_greedy_same_with_threads "got '$(cat "$TMP/out")'"; fi

# -p gives the same as -f for the same bytes
if "$BIN" run $T -m "$M" -p "$(cat "$P")" --temp 0 -n 24 >"$TMP/out" 2>/dev/null && cmp -s "$TMP/out" "$E"; then
    pass run_prompt_flag_equals_file
else fail run_prompt_flag_equals_file "stdout differs"; fi

# a stop string taken from the middle of the expected text (" " + its third
# word): the output is cut just before it
stop=" $(awk '{ print $3 }' "$E")"
expect_cut=$(awk -v s="$stop" '{ i = index($0, s); print substr($0, 1, i - 1) }' "$E")
if "$BIN" run $T -m "$M" -f "$P" --temp 0 -n 24 --stop "$stop" >"$TMP/out" 2>"$TMP/err" &&
    [ "$(cat "$TMP/out")" = "$expect_cut" ] && grep -q "stop: stop" "$TMP/err"; then
    pass run_stop_string_cuts_output
else fail run_stop_string_cuts_output "stop '$stop': got '$(cat "$TMP/out")' expected '$expect_cut'"; fi

# same seed, same output; another seed, another output
"$BIN" run $T -m "$M" -f "$P" --temp 1.5 --top-k 0 --top-p 1 --seed 7 -n 24 >"$TMP/a" 2>/dev/null
"$BIN" run $T -m "$M" -f "$P" --temp 1.5 --top-k 0 --top-p 1 --seed 7 -n 24 >"$TMP/b" 2>/dev/null
"$BIN" run $T -m "$M" -f "$P" --temp 1.5 --top-k 0 --top-p 1 --seed 8 -n 24 >"$TMP/c" 2>/dev/null
if [ -s "$TMP/a" ] && cmp -s "$TMP/a" "$TMP/b" && ! cmp -s "$TMP/a" "$TMP/c"; then
    pass run_same_seed_same_output
else fail run_same_seed_same_output "seeds 7/7/8 gave '$(cat "$TMP/a")' '$(cat "$TMP/b")' '$(cat "$TMP/c")'"; fi

# timings on stderr, nothing but the continuation on stdout
"$BIN" run $T -m "$M" -f "$P" --temp 0 -n 4 >"$TMP/out" 2>"$TMP/err"
if grep -q "load .* s | prompt 7 tokens, .* tok/s | generated 4 tokens, .* tok/s" "$TMP/err"; then
    pass run_reports_timings_on_stderr
else fail run_reports_timings_on_stderr "stderr: $(cat "$TMP/err")"; fi

# context overflow: a clear error before any output, or --truncate
if ! "$BIN" run $T -m "$M" -f "$P" --ctx 16 -n 24 >"$TMP/out" 2>"$TMP/err" && [ ! -s "$TMP/out" ] &&
    [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^nectar: error: .*exceeds the context of 16 tokens" "$TMP/err"; then
    pass run_context_overflow_is_one_line_error
else fail run_context_overflow_is_one_line_error "stderr: $(cat "$TMP/err")"; fi
if "$BIN" run $T -m "$M" -f "$P" --ctx 16 -n 12 --truncate --temp 0 >"$TMP/out" 2>"$TMP/err" &&
    grep -q "3 oldest dropped" "$TMP/err"; then
    pass run_truncate_keeps_last_tokens
else fail run_truncate_keeps_last_tokens "stderr: $(cat "$TMP/err")"; fi

# sampling defaults come from generation_config.json: the tiny models say
# do_sample false, so without sampling flags run is greedy, as HF would be
if "$BIN" run $T -m "$M" -f "$P" -n 24 >"$TMP/out" 2>/dev/null && cmp -s "$TMP/out" "$E"; then
    pass run_defaults_follow_generation_config
else fail run_defaults_follow_generation_config "got '$(cat "$TMP/out")'"; fi
mkdir -p "$TMP/badgen"
for f in config.json model.safetensors tokenizer.json tokenizer_config.json; do
    ln -s "$PWD/$M/$f" "$TMP/badgen/$f"
done
echo '{"do_sample": true, "top_p": "high"}' >"$TMP/badgen/generation_config.json"

# reject WANT PREFIX NAME ARGS...: exit WANT (x: any non-zero), one line on
# stderr starting with PREFIX, nothing on stdout. Bad input exits non-zero
# with "nectar: error: "; usage errors exit 2 in the option parser's wording
# (cli_opts.h).
reject() {
    want=$1 prefix=$2 name=$3
    shift 3
    "$BIN" run $T "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -ne 0 ] && { [ "$want" = x ] || [ "$rc" -eq "$want" ]; } && [ ! -s "$TMP/out" ] &&
        [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^$prefix" "$TMP/err"; then
        pass "run_rejects_$name"
    else fail "run_rejects_$name" "rc $rc, stderr '$(cat "$TMP/err")', stdout '$(head -c 80 "$TMP/out")'"; fi
}
bad() { reject x "nectar: error: " "$@"; }
usage_bad() { reject 2 "nectar run: " "$@"; }
usage_bad unknown_option -m "$M" -p x --bogus
usage_bad missing_model -p x
usage_bad missing_prompt -m "$M"
usage_bad prompt_and_file -m "$M" -p x -f "$P"
usage_bad missing_value -m "$M" -p x -n
usage_bad non_numeric_temp -m "$M" -p x --temp hot
usage_bad top_p_above_one -m "$M" -p x --top-p 1.5
usage_bad negative_top_k -m "$M" -p x --top-k -3
usage_bad negative_seed -m "$M" -p x --seed -1
usage_bad empty_stop -m "$M" -p x --stop ""
usage_bad zero_ctx -m "$M" -p x --ctx 0
bad missing_folder -m "$TMP/nope" -p x
bad missing_prompt_file -m "$M" -f "$TMP/nope.txt"
bad empty_prompt -m "$M" -p ""
bad folder_without_weights -m tests/fixtures/gen -p x
bad malformed_generation_config -m "$TMP/badgen" -p x
printf 'In the \377\376 beginning' >"$TMP/bad_utf8.txt"
bad invalid_utf8_prompt -m "$M" -f "$TMP/bad_utf8.txt"

if "$BIN" run --help >"$TMP/out" 2>&1 && grep -q -- "--top-p" "$TMP/out" && grep -q -- "--stop" "$TMP/out"; then
    pass run_help
else fail run_help "no help text"; fi
