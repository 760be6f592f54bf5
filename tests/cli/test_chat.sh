#!/bin/sh
# End-to-end `nectar chat` ($NECTAR_BIN) through a pipe on the tiny random
# Qwen3 checkpoints: two turns give byte-identical replies to HF transformers'
# greedy generation on apply_chat_template of the same history
# (tests/fixtures/gen/e2e/chat_*, from tools/make_gen_fixtures.py), which also
# shows the KV-cache prefix reuse changes nothing; /reset forgets the history.
. "$(dirname "$0")/../common/sh_test.sh"
FIX=tests/fixtures/gen/e2e
T="-t 1" # the tiny models gain nothing from threads; see test_run.sh
chat() { # model, extra args... (stdin: the user lines)
    m=$1; shift
    "$BIN" chat $T -m "tests/fixtures/qwen3/$m" --no-think --temp 0 -n 16 "$@"
}

for in in "$FIX"/chat_*.in; do
    name=$(basename "${in%.in}")
    model=${name#chat_}
    exp="${in%.in}.expected"
    if chat "$model" <"$in" >"$TMP/out" 2>"$TMP/err" && cmp -s "$TMP/out" "$exp"; then
        pass "chat_two_turns_match_hf_$model"
    else
        fail "chat_two_turns_match_hf_$model" "got '$(cat "$TMP/out")' expected '$(cat "$exp")' ($(tail -1 "$TMP/err"))"
    fi
done

# /reset: the first question asked again after /reset gets the first answer;
# asked again without /reset (history kept) the reply is the model's answer
# to a longer prompt
M=tiny_gqa2
first_q=$(head -1 "$FIX/chat_$M.in")
first_a=$(head -1 "$FIX/chat_$M.expected")
printf '%s\n/reset\n%s\n' "$first_q" "$first_q" | chat $M >"$TMP/out" 2>"$TMP/err"
if [ "$(sed -n 1p "$TMP/out")" = "$first_a" ] && [ "$(sed -n 2p "$TMP/out")" = "$first_a" ] &&
    grep -q "history cleared" "$TMP/err"; then
    pass chat_reset_forgets_history
else fail chat_reset_forgets_history "got '$(cat "$TMP/out")' expected '$first_a' twice"; fi
printf '%s\n%s\n' "$first_q" "$first_q" | chat $M >"$TMP/out" 2>/dev/null
if [ "$(sed -n 1p "$TMP/out")" = "$first_a" ] && [ "$(sed -n 2p "$TMP/out")" != "$first_a" ]; then
    pass chat_history_changes_the_reply
else fail chat_history_changes_the_reply "got '$(cat "$TMP/out")'"; fi

# the system prompt is part of the rendered conversation: it changes the reply
printf '%s\n' "$first_q" | chat $M --system "You are a helpful assistant." >"$TMP/out" 2>/dev/null
if [ -s "$TMP/out" ] && [ "$(sed -n 1p "$TMP/out")" != "$first_a" ]; then
    pass chat_system_prompt_is_used
else fail chat_system_prompt_is_used "got '$(cat "$TMP/out")'"; fi

# thinking mode (the default; no empty think block in the prompt) matches HF;
# these random models never emit <think>, so --hide-think changes nothing here
# (hiding and dimming themselves are tested in tests/gen/test_think.c)
for exp in "$FIX"/chat_think_*.expected; do
    model=$(basename "${exp%.expected}"); model=${model#chat_think_}
    q=$(head -1 "$FIX/chat_$model.in")
    printf '%s\n' "$q" | "$BIN" chat $T -m "tests/fixtures/qwen3/$model" --temp 0 -n 16 >"$TMP/out" 2>/dev/null
    printf '%s\n' "$q" | "$BIN" chat $T -m "tests/fixtures/qwen3/$model" --think --hide-think --temp 0 -n 16 >"$TMP/hid" 2>/dev/null
    if cmp -s "$TMP/out" "$exp" && cmp -s "$TMP/hid" "$exp"; then
        pass "chat_thinking_mode_matches_hf_$model"
    else fail "chat_thinking_mode_matches_hf_$model" "got '$(cat "$TMP/out")' / '$(cat "$TMP/hid")' expected '$(cat "$exp")'"; fi
done

# end of input right away: a clean exit
if chat $M </dev/null >"$TMP/out" 2>/dev/null && [ ! -s "$TMP/out" ]; then
    pass chat_eof_quits
else fail chat_eof_quits "rc or output"; fi

# bad arguments: one line, non-zero exit
"$BIN" chat $T -m "tests/fixtures/qwen3/$M" --bogus </dev/null >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^nectar chat: unknown option '--bogus'" "$TMP/err"; then
    pass chat_rejects_unknown_option
else fail chat_rejects_unknown_option "rc $rc stderr '$(cat "$TMP/err")'"; fi
"$BIN" chat </dev/null >"$TMP/out" 2>"$TMP/err"
if [ $? -eq 2 ] && grep -q "^nectar chat: --model DIR is required" "$TMP/err"; then
    pass chat_rejects_missing_model
else fail chat_rejects_missing_model "stderr '$(cat "$TMP/err")'"; fi

# context shift (the default): the second question outgrows a context of 50,
# so the first exchange is dropped and the reply is HF's answer to the
# question alone; with a system prompt, the answer to system + question
printf '%s\n%s\n' "$first_q" "$first_q" | chat $M --ctx 50 >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(sed -n 1p "$TMP/out")" = "$first_a" ] && [ "$(sed -n 2p "$TMP/out")" = "$first_a" ] &&
    grep -q "^nectar: context shift: dropped the 2 oldest messages; the conversation is [0-9]* tokens of 50$" "$TMP/err"; then
    pass chat_context_shift_drops_oldest_turn_matches_hf
else fail chat_context_shift_drops_oldest_turn_matches_hf "rc $rc stderr '$(cat "$TMP/err")' stdout '$(cat "$TMP/out")'"; fi
SYS="You are terse."
printf '%s\n' "$first_q" | chat $M --system "$SYS" >"$TMP/sys1" 2>/dev/null
printf '%s\n%s\n' "$first_q" "$first_q" | chat $M --system "$SYS" --ctx 60 >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 0 ] && [ -s "$TMP/sys1" ] && [ "$(sed -n 2p "$TMP/out")" = "$(cat "$TMP/sys1")" ] &&
    [ "$(cat "$TMP/sys1")" != "$first_a" ] &&
    grep -q "^nectar: context shift: dropped the 2 oldest messages (the system prompt kept)" "$TMP/err"; then
    pass chat_context_shift_keeps_system_prompt
else fail chat_context_shift_keeps_system_prompt "rc $rc stderr '$(cat "$TMP/err")' stdout '$(cat "$TMP/out")' alone '$(cat "$TMP/sys1")'"; fi
# the issue's reproduction: the demo's first reply fills its context of 512;
# the chat goes on, with --truncate and without
for f in --truncate ""; do
    printf 'Hello\nAnd then?\n' | "$BIN" chat -t 2 -m models/demo $f >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 0 ] && [ "$(grep -c "stop:" "$TMP/err")" -eq 2 ] && ! grep -q "error" "$TMP/err" &&
        grep -q "context shift" "$TMP/err"; then
        pass "chat_demo_keeps_going_past_the_context${f:+_truncate}"
    else fail "chat_demo_keeps_going_past_the_context${f:+_truncate}" "rc $rc stderr '$(cat "$TMP/err")'"; fi
done

# --no-context-shift: a conversation that outgrows the context is an error
# for that turn, then /reset makes the chat usable again
printf '%s\n%s\n/reset\n%s\n' "$first_q" "$first_q" "$first_q" | chat $M --ctx 50 --no-context-shift >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "^nectar: error: .*context of 50 tokens" "$TMP/err" &&
    [ "$(tail -1 "$TMP/out")" = "$first_a" ]; then
    pass chat_context_overflow_then_reset
else fail chat_context_overflow_then_reset "rc $rc stderr '$(cat "$TMP/err")' stdout '$(cat "$TMP/out")'"; fi

if "$BIN" chat --help >"$TMP/out" 2>&1 && grep -q -- "--no-think" "$TMP/out"; then
    pass chat_help
else fail chat_help "no help text"; fi
