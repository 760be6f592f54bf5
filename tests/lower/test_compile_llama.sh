#!/bin/sh
# Llama through `nectar compile` ($NECTAR_BIN): Qwen3's lowering without the
# q/k norms, with Llama 3's scaled RoPE frequencies in the host's tables.
# The tiny HF fixture (rope_scaling llama3, untied head) and a demo-sized
# Llama (models/demo's weights under a Llama config with llama3 scaling:
# head_dim 64, as real models) compile, pass `nectar mil check --target ane`
# (the demo-sized one with 0 warnings, as models/demo) and give the cpu
# backend's 64 greedy tokens through --backend mil and --backend ane
# --ane-device fake. The cpu backend is checked against HF's logits and
# greedy ids in tests/models/test_qwen3_parity.c; the bundles against them in
# tests/lower/test_lower_qwen3.c.
BIN=${NECTAR_BIN:-build/nectar}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
P="In the beginning"
# report NAME OK DETAIL: one PASS line when OK is 0, else a FAIL line with DETAIL
report() { if [ "$2" = 0 ]; then echo "PASS $1"; else echo "FAIL $1: $3"; fi; }

# same_as_cpu NAME BUNDLE RUN-OPTIONS...: 64 greedy tokens through the
# bundle equal $TMP/cpu
same_as_cpu() {
    label=$1
    b=$2
    shift 2
    "$BIN" run -t 1 "$@" -m "$b" -p "$P" --temp 0 -n 64 >"$TMP/out" 2>"$TMP/err"
    [ -s "$TMP/cpu" ] && cmp -s "$TMP/cpu" "$TMP/out"
    report "$label" $? "cpu '$(cat "$TMP/cpu")' got '$(cat "$TMP/out")' $(tail -1 "$TMP/err")"
}

# models/demo's weights as a Llama: its q/k norm tensors are not read
D="$TMP/demo_llama"
mkdir -p "$D" && cp models/demo/tokenizer.json models/demo/tokenizer_config.json \
    models/demo/generation_config.json models/demo/model.safetensors "$D/"
sed -e 's/"model_type": "qwen3"/"model_type": "llama"/' \
    -e 's/"rope_type": "default"/"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64/' \
    models/demo/config.json >"$D/config.json"

for m in tests/fixtures/llama/tiny_llama3 "$D"; do
    name=$(basename "$m")
    B="$TMP/b_$name"
    "$BIN" compile -m "$m" -o "$B" --ctx 128 -t 1 >"$TMP/out" 2>"$TMP/err" &&
        grep -q '"model_type": "llama"' "$B/manifest.json" &&
        grep -q '"rope_type": "llama3"' "$B/manifest.json" &&
        ! grep -q "q_norm" "$B/layer_00/model.mil"
    report "compile_llama_${name}" $? "$(tail -2 "$TMP/err")"
    # head_dim 24 gives the ane-matmul-inner warnings the Qwen3 fixtures of that
    # head_dim give (9 for 3 layers); head_dim 64 none
    want=9
    [ "$m" = "$D" ] && want=0
    "$BIN" mil check --target ane "$B" >"$TMP/chk" 2>&1 &&
        tail -1 "$TMP/chk" | grep -q " 0 errors, $want warnings$"
    report "mil_check_ane_llama_${name}_${want}_warnings" $? "$(tail -1 "$TMP/chk")"
    "$BIN" run -t 1 -m "$m" -p "$P" --temp 0 -n 64 >"$TMP/cpu" 2>"$TMP/err"
    same_as_cpu "run_llama_${name}_mil_equals_cpu" "$B" --backend mil
    same_as_cpu "run_llama_${name}_ane_equals_cpu" "$B" --backend ane --ane-device fake
done

# the grouped attention form and one kernel per layer on the Llama layout
# (no q/k norm before the grouped RoPE)
B="$TMP/b_grouped"
"$BIN" compile -m "$D" -o "$B" --ctx 128 --attention grouped --kernels-per-layer 1 -t 1 \
    >/dev/null 2>&1
same_as_cpu run_llama_grouped_one_kernel_mil_equals_cpu "$B" --backend mil
