#!/bin/sh
# End-to-end `nectar run` ($NECTAR_BIN) on the tiny random Qwen3.5
# checkpoints (both layouts) through the engine seam's qwen35-cpu engine:
# greedy output byte-identical to HF transformers' for prompts of 4, 33 and
# 202 tokens (tests/fixtures/qwen35/*/run_<i>.{prompt,expected}, written by
# tools/make_qwen35_fixtures.py; tiny_eos_mid's greedy text runs on through
# <|endoftext|>, which its config does not name as eos), with fp32 and fp16 KV caches and after
# `nectar quantize` (q8: runs and stays close, not byte-identical).
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"

for m in tests/fixtures/qwen35/tiny_text_untied tests/fixtures/qwen35/tiny_vl_tied \
    tests/fixtures/qwen35/tiny_eos_mid; do
    for p in "$m"/run_*.prompt; do
        e=${p%.prompt}.expected
        name=$(basename "$m")_$(basename "${p%.prompt}")
        if "$BIN" run $T -m "$m" -f "$p" --temp 0 -n 32 >"$TMP/out" 2>"$TMP/err" &&
            cmp -s "$TMP/out" "$e"; then
            pass "qwen35_run_greedy_matches_hf_$name"
        else
            fail "qwen35_run_greedy_matches_hf_$name" "got '$(cat "$TMP/out")' expected '$(cat "$e")' ($(tail -1 "$TMP/err"))"
        fi
    done
done

M=tests/fixtures/qwen35/tiny_vl_tied
if NECTAR_KV=f16 "$BIN" run $T -m "$M" -f "$M/run_1.prompt" --temp 0 -n 32 >"$TMP/out" 2>/dev/null &&
    cmp -s "$TMP/out" "$M/run_1.expected"; then
    pass qwen35_run_fp16_kv_same_greedy_text
else fail qwen35_run_fp16_kv_same_greedy_text "got '$(cat "$TMP/out")'"; fi

# q8/q4 weights: quantize loads the result through the qwen35-cpu engine,
# run generates the full length (random weights have margins too small for
# the text to stay identical under quantization)
for q in q8 q4; do
    if "$BIN" quantize -m "$M" -o "$TMP/$q" --type $q >/dev/null 2>"$TMP/err" &&
        "$BIN" run $T -m "$TMP/$q" -f "$M/run_0.prompt" --temp 0 -n 8 >"$TMP/out" 2>"$TMP/err" &&
        grep -q "generated 8 tokens" "$TMP/err"; then
        pass qwen35_run_${q}_weights
    else fail qwen35_run_${q}_weights "$(tail -2 "$TMP/err")"; fi
done

# nectar chat renders Qwen3.5's template: the prompt's token count is HF's
# (chat_prompt_tokens.txt: thinking on, off); with thinking on the reply
# starts inside <think>, so --hide-think hides all of a short reply
read n_think n_nothink <"$M/chat_prompt_tokens.txt"
msg="Who made the heaven?"
if printf '%s\n' "$msg" | "$BIN" chat $T -m "$M" --temp 0 -n 6 --hide-think >"$TMP/out" 2>"$TMP/err" &&
    grep -q "prompt $n_think tokens" "$TMP/err" && [ -z "$(tr -d '\n' <"$TMP/out")" ] &&
    printf '%s\n' "$msg" | "$BIN" chat $T -m "$M" --temp 0 -n 6 --no-think >"$TMP/out" 2>"$TMP/err" &&
    grep -q "prompt $n_nothink tokens" "$TMP/err"; then
    pass qwen35_chat_renders_the_qwen35_template
else fail qwen35_chat_renders_the_qwen35_template "$(cat "$TMP/err")"; fi

# the ANE backend runs compiled bundles (tests/cli/test_backends.sh): a
# checkpoint folder is one line saying it is not a bundle, as for Qwen3
if ! "$BIN" run $T -m "$M" -p hi --backend ane --ane-device fake -n 1 >/dev/null 2>"$TMP/err" &&
    [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "not a bundle" "$TMP/err"; then
    pass qwen35_run_ane_backend_on_a_folder_is_one_line
else fail qwen35_run_ane_backend_on_a_folder_is_one_line "$(cat "$TMP/err")"; fi
