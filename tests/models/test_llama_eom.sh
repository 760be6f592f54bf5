#!/bin/sh
# Llama 3.1's <|eom_id|> (end of a message that awaits a tool's output)
# ends generation exactly when generation_config.json's eos_token_id lists
# it, as HF's generate() does: Llama 3.1's and 3.2's published configs list
# [128001, 128008, 128009] (<|end_of_text|>, <|eom_id|>, <|eot_id|>).
# tiny_llama3 with one added token renamed <|eom_id|> (the substitutions of
# tools/make_llama3_fixtures.py's eom_folder), greedy, against HF's
# generated ids (tests/fixtures/llama/tiny_llama3_eom.json): listed, it
# stops on it after 8 tokens ("stop: eos", the token not printed); left out,
# it runs on through it to -n 16, printing it.
. "$(dirname "$0")/../common/sh_test.sh"
REF=tests/fixtures/llama/tiny_llama3_eom.json
if ! command -v jq >/dev/null 2>&1; then
    echo "SKIP llama_eom: jq is missing (sh scripts/install-deps.sh --test)"
    exit 0
fi
D="$TMP/eom"
cp -r tests/fixtures/llama/tiny_llama3 "$D"
sed 's|"content":"</think>"|"content":"<\|eom_id\|>"|' tests/fixtures/llama/tiny_llama3/tokenizer.json >"$D/tokenizer.json"
sed 's|"content": "</think>"|"content": "<\|eom_id\|>"|' tests/fixtures/llama/tiny_llama3/tokenizer_config.json >"$D/tokenizer_config.json"
jq -j .prompt "$REF" >"$TMP/prompt.txt"
for c in 0 1; do
    name=$([ $c = 0 ] && echo llama_eom_listed_stops_there || echo llama_eom_not_listed_runs_on)
    jq -c "{do_sample: false, eos_token_id: .cases[$c].eos_token_id}" "$REF" >"$D/generation_config.json"
    ids=$(jq -r ".cases[$c].generated_ids | join(\" \")" "$REF")
    n=$(jq ".cases[$c].generated_ids | length" "$REF")
    stopped=$(jq ".cases[$c].stopped_at_eom" "$REF")
    # the text of HF's ids, the <|eom_id|> it stopped on left out
    shown=$ids
    [ "$stopped" = true ] && shown=${ids% *}
    "$BIN" tokenize -m "$D" --decode -p "$shown" >"$TMP/want.$c" 2>"$TMP/errd"
    "$BIN" run -t 2 -m "$D" -f "$TMP/prompt.txt" -n 16 --temp 0 >"$TMP/got.$c" 2>"$TMP/err.$c"
    why=$([ "$stopped" = true ] && echo eos || echo length)
    if [ -s "$TMP/want.$c" ] && cmp -s "$TMP/want.$c" "$TMP/got.$c" &&
        grep -q "generated $n tokens, .* stop: $why" "$TMP/err.$c"; then
        pass "$name"
    else
        fail "$name" "HF '$(cat "$TMP/want.$c")' ($n tokens, $why), nectar '$(cat "$TMP/got.$c")' $(tail -1 "$TMP/err.$c") $(cat "$TMP/errd")"
    fi
done
