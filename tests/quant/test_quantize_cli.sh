#!/bin/sh
# `nectar quantize` from the command line: q8 and q4 folders of a tiny HF
# fixture that `nectar bench` then loads (dtype printed as q8/q4), the
# tensors' stored dtype and shape (U8, [rows, blocks x 34 or 18]), and bad
# arguments and inputs: exit non-zero, one stderr line, no model file left.
BIN=${NECTAR_BIN:-build/nectar}
FIX=tests/fixtures/qwen3/tiny_gqa2
T=${NECTAR_BUILD:-build}/tmp/test_quantize_cli.$$
if [ ! -x "$BIN" ]; then echo "SKIP quantize_cli: $BIN not built"; exit 0; fi
if [ ! -d "$FIX" ]; then echo "SKIP quantize_cli: $FIX missing"; exit 0; fi
rm -rf "$T"; mkdir -p "$T"

for type in q8 q4; do
    if "$BIN" quantize -m "$FIX" --type $type -o "$T/$type" >"$T/out" 2>"$T/err" &&
        "$BIN" bench -m "$T/$type" -p 4 -n 2 --runs 1 --bw-mib 8 >"$T/bench" 2>&1 &&
        grep -q "^model $T/$type: $type," "$T/bench" && [ -f "$T/$type/config.json" ]; then
        echo "PASS quantize_${type}_loads_in_bench"
    else
        echo "FAIL quantize_${type}_loads_in_bench:"; cat "$T/out" "$T/err" "$T/bench"
    fi
done

# The headers: up_proj (96 x 64 weights) is U8 [96, 2 * 34] in q8 and
# [96, 2 * 18] in q4; norms keep their dtype.
hdr() { # FILE: the JSON header
    len=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
    dd if="$1" bs=1 skip=8 count="$len" 2>/dev/null
}
if hdr "$T/q8/model.safetensors" | grep -q '"model.layers.0.mlp.up_proj.weight":{"dtype":"U8","shape":\[96,68\]' &&
    hdr "$T/q4/model.safetensors" | grep -q '"model.layers.0.mlp.up_proj.weight":{"dtype":"U8","shape":\[96,36\]' &&
    hdr "$T/q8/model.safetensors" | grep -q '"model.norm.weight":{"dtype":"F32"'; then
    echo "PASS quantize_tensor_dtypes_and_shapes"
else
    echo "FAIL quantize_tensor_dtypes_and_shapes:"; hdr "$T/q8/model.safetensors" | head -c 600; echo
fi

# expect NAME WANT ARGS...: exit 1, one stderr line containing WANT
expect() {
    name=$1 want=$2; shift 2
    "$BIN" quantize "$@" >"$T/out" 2>"$T/err"
    rc=$?
    lines=$(wc -l <"$T/err")
    if [ "$rc" -ne 0 ] && [ "$lines" -ge 1 ] && head -1 "$T/err" | grep -qF -- "$want"; then
        echo "PASS $name"
    else
        echo "FAIL $name: exit $rc, want '$want':"; cat "$T/err"
    fi
}
expect quantize_bad_type "--type: 'q3' is not one of q8|q4" -m "$FIX" --type q3 -o "$T/bad"
expect quantize_missing_folder "$T/nope" -m "$T/nope" --type q8 -o "$T/bad2"
expect quantize_same_folder "must differ from the input" -m "$T/q8" --type q8 -o "$T/q8"
expect quantize_missing_args "required" -m "$FIX"
# Refused inputs, checked before anything is written: an encoder folder
# (the message names the input's config), an already quantized folder, an
# output path that holds something else.
expect quantize_encoder_names_the_input "tests/fixtures/st/st_max/config.json: model_type 'modernbert'" \
    -m tests/fixtures/st/st_max --type q8 -o "$T/enc"
expect quantize_of_quantized_refused "$T/q8: already quantized" -m "$T/q8" --type q4 -o "$T/qq"
mkdir -p "$T/other" && echo keep >"$T/other/notes.txt"
expect quantize_will_not_replace_other_things "$T/other: exists and is not a model folder" \
    -m "$FIX" --type q8 -o "$T/other"
if [ ! -e "$T/enc" ] && [ ! -e "$T/qq" ] && [ "$(ls "$T/other")" = notes.txt ] &&
    [ -z "$(ls -d "$T"/*.tmp.* 2>/dev/null)" ]; then
    echo "PASS quantize_refusals_write_nothing"
else
    echo "FAIL quantize_refusals_write_nothing:"; ls -R "$T" | head -20
fi
# A failure after the weights are written (the config does not match them,
# which only the load of the result finds) leaves no temporary sibling, and
# an older model folder at OUT stays as it was.
mkdir -p "$T/short" && cp "$FIX/model.safetensors" "$FIX/tokenizer.json" "$T/short/"
sed 's/"intermediate_size": 96/"intermediate_size": 80/' "$FIX/config.json" >"$T/short/config.json"
cp "$T/q4/model.safetensors" "$T/q4.keep"
"$BIN" quantize -m "$T/short" --type q8 -o "$T/q4" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && [ -z "$(ls -d "$T"/*.tmp.* 2>/dev/null)" ] &&
    cmp -s "$T/q4/model.safetensors" "$T/q4.keep"; then
    echo "PASS quantize_failure_leaves_the_older_folder_whole"
else
    echo "FAIL quantize_failure_leaves_the_older_folder_whole: exit $rc"; cat "$T/err"; ls "$T"
fi
if [ ! -e "$T/bad/model.safetensors" ] && [ ! -e "$T/bad2/model.safetensors" ]; then
    echo "PASS quantize_errors_leave_no_model_file"
else
    echo "FAIL quantize_errors_leave_no_model_file"
fi
# A quantized matrix whose shape does not match the config (rows and row
# bytes swapped: same byte count, so the file itself is valid): load fails
# naming the tensor and both shapes the config allows.
mkdir -p "$T/bad_shape" && cp "$T/q8/config.json" "$T/bad_shape/"
f=$T/q8/model.safetensors
len=$(od -An -t u8 -N 8 "$f" | tr -d ' ')
{ dd if="$f" bs=8 count=1 2>/dev/null
  hdr "$f" | sed 's/"model.layers.0.mlp.up_proj.weight":{"dtype":"U8","shape":\[96,68\]/"model.layers.0.mlp.up_proj.weight":{"dtype":"U8","shape":[68,96]/'
  tail -c +$((len + 9)) "$f"; } >"$T/bad_shape/model.safetensors"
"$BIN" bench -m "$T/bad_shape" -p 4 -n 2 --runs 1 >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
    grep -qF "quantized tensor 'model.layers.0.mlp.up_proj.weight' has shape [68, 96]; the config needs [96, 68] (q8) or [96, 36] (q4)" "$T/err"; then
    echo "PASS quantized_wrong_shape_is_one_clear_error"
else
    echo "FAIL quantized_wrong_shape_is_one_clear_error: exit $rc"; cat "$T/err"
fi
rm -rf "$T"
