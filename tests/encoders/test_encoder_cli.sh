#!/bin/sh
# `nectar embed`, `fill-mask` and `classify` end to end on the tiny fixtures
# of tools/make_modernbert_fixtures.py, against HF's numbers (pooled vectors,
# top-5 ids and probabilities at [MASK], label probabilities; |diff| <= 1e-4),
# and bad inputs: exit 1 with one stderr line naming the problem, no output
# file left behind.
BIN=${NECTAR_BIN:-build/nectar}
FIX=tests/fixtures/modernbert
T=${NECTAR_BUILD:-build}/tmp/test_encoder_cli.$$
if [ ! -x "$BIN" ]; then echo "SKIP encoder_cli: $BIN not built"; exit 0; fi
rm -rf "$T"; mkdir -p "$T"

# close NAME GOT WANT: two files of numbers, one per line, equal within 1e-4
close() {
    if [ "$(wc -l <"$2")" -eq "$(wc -l <"$3")" ] && [ -s "$2" ] &&
        paste "$2" "$3" | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4) bad = 1}
                               END {exit bad}'; then
        echo "PASS $1"
    else
        echo "FAIL $1: numbers differ from HF"; paste "$2" "$3" | head -5
    fi
}
# numbers after KEY in a JSON text, one per line
nums() { tr ',[]{}' '\n\n\n\n\n' | sed -n "s/.*\"$1\": *//p"; }

# embed: mean pooling, and CLS pooling normalised
"$BIN" embed -m $FIX/mb_base -f $FIX/mb_base/ref/texts.txt --pooling mean --batch 2 \
    -o "$T/mean.json" 2>"$T/err"
tr ',[]' '\n\n\n' <"$T/mean.json" | sed -n '/embeddings/,$p' | grep -E '^ *-?[0-9]' |
    tr -d ' ' >"$T/mean.txt"
close embed_mean_matches_hf "$T/mean.txt" $FIX/mb_base/ref/embed_mean.txt
if grep -q "embed: 3 inputs, .* tokens/s" "$T/err"; then echo "PASS embed_prints_throughput"
else echo "FAIL embed_prints_throughput:"; cat "$T/err"; fi
"$BIN" embed -m $FIX/mb_base -f $FIX/mb_base/ref/texts.txt --pooling cls --normalize \
    2>/dev/null | tr ',[]' '\n\n\n' | sed -n '/embeddings/,$p' | grep -E '^ *-?[0-9]' |
    tr -d ' ' >"$T/cls.txt"
close embed_cls_normalized_matches_hf "$T/cls.txt" $FIX/mb_base/ref/embed_cls_norm.txt
"$BIN" embed -m $FIX/mb_base -f $FIX/mb_base/ref/texts.txt --pooling mean --format npy \
    -o "$T/mean.npy" 2>/dev/null
if [ "$(head -c 6 "$T/mean.npy" | tail -c 5)" = "NUMPY" ] &&
    [ "$(wc -c <"$T/mean.npy")" -eq $((128 + 3 * 64 * 4)) ]; then echo "PASS embed_npy_written"
else echo "FAIL embed_npy_written"; fi

# fill-mask: the top 5 at [MASK] (ids in order, probabilities)
"$BIN" fill-mask -m $FIX/mb_mlm -p "Paris is the [MASK] of France." --format json \
    >"$T/fm.json" 2>/dev/null
nums token <"$T/fm.json" >"$T/fm_ids.txt"
nums score <"$T/fm.json" >"$T/fm_p.txt"
tr -d ' \n' <$FIX/mb_mlm/ref/fill_mask.json | sed 's/.*"ids":\[\([^]]*\)\].*/\1/' |
    tr ',' '\n' | awk '{print}' >"$T/ref_ids.txt"
tr -d ' \n' <$FIX/mb_mlm/ref/fill_mask.json | sed 's/.*"probs":\[\([^]]*\)\].*/\1/' |
    tr ',' '\n' | awk '{print}' >"$T/ref_p.txt"
if cmp -s "$T/fm_ids.txt" "$T/ref_ids.txt"; then echo "PASS fill_mask_top5_ids_match_hf"
else echo "FAIL fill_mask_top5_ids_match_hf"; paste "$T/fm_ids.txt" "$T/ref_ids.txt"; fi
close fill_mask_probabilities_match_hf "$T/fm_p.txt" "$T/ref_p.txt"

# classify: label probabilities of three inputs in one padded batch
"$BIN" classify -m $FIX/mm_cls -f $FIX/mm_cls/ref/texts.txt --format json >"$T/cl.json" \
    2>/dev/null
# ours sorted by score; HF's by label id: compare per (input, id)
awk '{while (match($0, /"id": [0-9]+, "score": [0-9.e-]+/)) {
        s = substr($0, RSTART, RLENGTH); split(s, f, /[:,] */);
        print NR, f[2], f[4]; $0 = substr($0, RSTART + RLENGTH)}}' "$T/cl.json" |
    sort -k1,1n -k2,2n | awk '{print $3}' >"$T/cl_p.txt"
tr -d ' \n' <$FIX/mm_cls/ref/classify.json | sed 's/.*"probs":\[\(.*\)\]}/\1/' |
    tr -d '[]' | tr ',' '\n' | awk '{print}' >"$T/ref_cl.txt"
close classify_probabilities_match_hf "$T/cl_p.txt" "$T/ref_cl.txt"
if "$BIN" classify -m $FIX/mm_cls -p "Café résumé" 2>/dev/null | grep -q "^  positive"; then
    echo "PASS classify_text_lists_labels"
else echo "FAIL classify_text_lists_labels"; fi

# bad inputs: exit 1, one stderr line containing WANT, no output file
expect() {
    name=$1 want=$2; shift 2
    rm -f "$T/out.json"
    "$BIN" "$@" >/dev/null 2>"$T/err"
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -qF -- "$want" "$T/err" &&
        [ ! -e "$T/out.json" ] && [ ! -e "$T/out.json.tmp" ]; then
        echo "PASS $name"
    else
        echo "FAIL $name: exit $rc, want '$want':"; cat "$T/err"
    fi
}
expect embed_missing_folder "$T/nope: no such" embed -m "$T/nope" -p hi -o "$T/out.json"
# sentence-transformers folders: the pooling of 1_Pooling and the Normalize
# module apply, as SentenceTransformer(dir).encode (tests/fixtures/st; the
# texts are within the limit and these folders have no default prompt)
for st in st_max st_last st_wmean; do
    ref=tests/fixtures/st/$st/ref.json
    sed -n '/"texts"/,/\]/p' "$ref" | sed -n 's/^ *"\(.*\)",\{0,1\}$/\1/p' >"$T/st_texts.txt"
    "$BIN" embed -m tests/fixtures/st/$st -f "$T/st_texts.txt" --batch 2 -o "$T/st.json" 2>"$T/err"
    tr ',[]' '\n\n\n' <"$T/st.json" | sed -n '/embeddings/,$p' | grep -E '^ *-?[0-9]' |
        tr -d ' ' >"$T/st.txt"
    sed -n '/"embeddings"/,$p' "$ref" | grep -E '^ *-?[0-9]' | tr -d ' ,' >"$T/st_want.txt"
    close embed_equals_sentence_transformers_$st "$T/st.txt" "$T/st_want.txt"
done
expect fill_mask_needs_mlm "not a ModernBertForMaskedLM" fill-mask -m $FIX/mb_base -p "a [MASK]"
expect fill_mask_needs_mask "input 1 has no mask token" fill-mask -m $FIX/mb_mlm -p "no mask"
expect classify_needs_classifier "not a ModernBertForSequenceClassification" \
    classify -m $FIX/mb_mlm -p hi
expect embed_bad_pooling "--pooling: 'sum' is not one of cls|mean|max|lasttoken|mean_sqrt_len_tokens|weightedmean" embed -m $FIX/mb_base -p hi --pooling sum
expect embed_npy_needs_out "needs -o" embed -m $FIX/mb_base -p hi --format npy
printf 'fine line\n\377\376 bad utf8\n' >"$T/bad.txt"
expect embed_invalid_utf8_line "input 2" embed -m $FIX/mb_base -f "$T/bad.txt" -o "$T/out.json"
: >"$T/empty.txt"
expect embed_empty_file "no input lines" embed -m $FIX/mb_base -f "$T/empty.txt"
mkdir -p "$T/qwen"; cp tests/fixtures/qwen3/tiny_gqa2/config.json "$T/qwen/"
cp $FIX/mb_base/tokenizer.json "$T/qwen/"
expect embed_not_modernbert "model_type 'qwen3' is not supported" embed -m "$T/qwen" -p hi
mkdir -p "$T/short"; cp $FIX/mb_base/config.json $FIX/mb_base/tokenizer.json "$T/short/"
head -c 1000 $FIX/mb_base/model.safetensors >"$T/short/model.safetensors"
expect embed_truncated_weights "model.safetensors" embed -m "$T/short" -p hi
mkdir -p "$T/badjson"; cp $FIX/mb_base/tokenizer.json "$T/badjson/"
printf '{"model_type": "modernbert",\n  "hidden_size": ,\n}\n' >"$T/badjson/config.json"
expect embed_bad_json_names_line "badjson/config.json:2:" embed -m "$T/badjson" -p hi
rm -rf "$T"
