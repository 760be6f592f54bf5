#!/bin/sh
# `nectar bench -m BADDIR` on broken model folders: each must exit non-zero
# with exactly one line on stderr that names the file, field or tensor, and
# never crash. Also gen-random --like tiny + bench on the result (a smoke
# test of both commands at a toy shape).
BIN=${NECTAR_BIN:-build/nectar}
FIX=tests/fixtures/qwen3/tiny_gqa2
T=${NECTAR_BUILD:-build}/tmp/test_bad_models.$$
if [ ! -x "$BIN" ]; then echo "SKIP bad_models: $BIN not built"; exit 0; fi
if [ ! -d "$FIX" ]; then echo "SKIP bad_models: $FIX missing"; exit 0; fi
rm -rf "$T"; mkdir -p "$T"

# expect NAME DIR WANT: bench fails (exit 1), one stderr line containing WANT
expect() {
    name=$1 dir=$2 want=$3
    "$BIN" bench -m "$dir" -p 4 -n 2 --runs 1 >"$T/out" 2>"$T/err"
    rc=$?
    lines=$(wc -l <"$T/err")
    if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && grep -qF -- "$want" "$T/err"; then
        echo "PASS $name"
    else
        echo "FAIL $name: exit $rc, $lines stderr lines, want '$want':"; cat "$T/err"
    fi
}

mkcase() { # NAME: a copy of the fixture folder
    mkdir -p "$T/$1" && cp "$FIX/config.json" "$FIX/model.safetensors" "$T/$1/"
}

expect missing_folder "$T/nope" "$T/nope: no such model folder"

mkcase no_config; rm "$T/no_config/config.json"
expect missing_config "$T/no_config" "no_config/config.json: file not found"

mkcase no_weights; rm "$T/no_weights/model.safetensors"
expect missing_weights "$T/no_weights" "no model.safetensors or model.safetensors.index.json"

mkcase bad_json; printf '{"model_type": "qwen3",\n  "hidden_size": 64,,\n}\n' >"$T/bad_json/config.json"
expect bad_json "$T/bad_json" "bad_json/config.json:2:"

mkcase mistral; sed 's/"qwen3"/"mistral"/' "$FIX/config.json" >"$T/mistral/config.json"
expect unknown_architecture "$T/mistral" "model_type 'mistral' is not supported"

mkcase truncated; head -c 100000 "$FIX/model.safetensors" >"$T/truncated/model.safetensors"
expect truncated_safetensors "$T/truncated" "truncated/model.safetensors: tensor '"

mkcase tiny_file; printf 'abc' >"$T/tiny_file/model.safetensors"
expect not_safetensors "$T/tiny_file" "tiny_file/model.safetensors: too short"

mkcase corrupt; cp "$FIX/model.safetensors" "$T/corrupt/model.safetensors"
printf 'XXXX' | dd of="$T/corrupt/model.safetensors" bs=1 seek=30 conv=notrunc 2>/dev/null
expect corrupted_header "$T/corrupt" "corrupt/model.safetensors: header"

mkcase dtype
sed 's/"F32"/"I32"/' "$FIX/model.safetensors" >"$T/dtype/model.safetensors" 2>/dev/null
expect wrong_dtype "$T/dtype" "has dtype I32; expected F32, F16 or BF16"

# Gemma 3 (the multimodal layout): a missing norm of the language model is
# named, and so is an activation the decoder does not compute
G=tests/fixtures/gemma3/tiny_gemma3_mm
mkdir -p "$T/gemma_norm" "$T/gemma_act"
cp "$G/config.json" "$T/gemma_norm/"
sed 's/layers\.1\.pre_feedforward_layernorm/layers.1.pre_feedforward_layernorX/' \
    "$G/model.safetensors" >"$T/gemma_norm/model.safetensors" 2>/dev/null
expect gemma3_missing_norm "$T/gemma_norm" \
    "language_model.model.layers.1.pre_feedforward_layernorm.weight"
cp "$G/model.safetensors" "$T/gemma_act/"
sed 's/"gelu_pytorch_tanh"/"gelu"/' "$G/config.json" >"$T/gemma_act/config.json"
expect gemma3_activation "$T/gemma_act" "hidden_activation 'gelu' is not supported"

# gen-random at a toy shape, then bench it
if "$BIN" gen-random --like tiny "$T/gen" --seed 3 2>"$T/err" && \
   "$BIN" bench -t 2 -m "$T/gen" -p 8 -n 4 --runs 2 --json >"$T/out" 2>>"$T/err" && \
   grep -q '"pp": {"n_tokens": 8' "$T/out" && grep -q '"tg": {"n_tokens": 4' "$T/out"; then
    echo "PASS gen_random_then_bench"
else
    echo "FAIL gen_random_then_bench:"; cat "$T/err" "$T/out"
fi
rm -rf "$T"
