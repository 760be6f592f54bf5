#!/bin/sh
# The other families through `nectar compile` ($NECTAR_BIN) and Qwen3's
# lowering. Llama: no q/k norms, Llama 3's scaled RoPE frequencies in the
# host's tables; the tiny HF fixture (rope_scaling llama3, untied head) and
# a demo-sized Llama (models/demo's weights under a Llama config with
# llama3 scaling: head_dim 64, as real models). Gemma 3: the text and the
# multimodal fixtures with one 32-wide bucket, so the sliding layers' caches
# are 64-slot windows that 64 greedy tokens wrap. Each bundle passes
# `nectar mil check --target ane` (the head_dim-64 one with 0 warnings, as
# models/demo; the tiny ones with the ane-matmul-inner warnings of their
# head_dim, as the Qwen3 fixtures) and gives the cpu backend's 64 greedy
# tokens through --backend mil and --backend ane --ane-device fake. The cpu
# backend is checked against HF's logits and greedy ids in
# tests/models/test_qwen3_parity.c; the bundles against them in
# tests/lower/test_lower_qwen3.c.
BIN=${NECTAR_BIN:-build/nectar}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# report NAME OK DETAIL: one PASS line when OK is 0, else a FAIL line with DETAIL
report() { if [ "$2" = 0 ]; then echo "PASS $1"; else echo "FAIL $1: $3"; fi; }

# same_as_cpu NAME BUNDLE PROMPT RUN-OPTIONS...: 64 greedy tokens through
# the bundle equal $TMP/cpu
same_as_cpu() {
    label=$1
    b=$2
    P=$3
    shift 3
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

# compiled NAME MODEL PROMPT WARNINGS TYPE COMPILE-OPTIONS...: compile, check
# the manifest's model type, `mil check --target ane` with WARNINGS
# warnings, then 64 greedy tokens of PROMPT on mil and the fake ANE = cpu
compiled() {
    name=$1
    m=$2
    prompt=$3
    want=$4
    type=$5
    shift 5
    B="$TMP/b_$name"
    "$BIN" compile -m "$m" -o "$B" --ctx 128 -t 1 "$@" >"$TMP/out" 2>"$TMP/err" &&
        grep -q "\"model_type\": \"$type\"" "$B/manifest.json"
    report "compile_${name}" $? "$(tail -2 "$TMP/err")"
    "$BIN" mil check --target ane "$B" >"$TMP/chk" 2>&1 &&
        tail -1 "$TMP/chk" | grep -q " 0 errors, $want warnings$"
    report "mil_check_ane_${name}_${want}_warnings" $? "$(tail -1 "$TMP/chk")"
    "$BIN" run -t 1 -m "$m" -p "$prompt" --temp 0 -n 64 >"$TMP/cpu" 2>"$TMP/err"
    same_as_cpu "run_${name}_mil_equals_cpu" "$B" "$prompt" --backend mil
    same_as_cpu "run_${name}_ane_equals_cpu" "$B" "$prompt" --backend ane --ane-device fake
}

# head_dim 24: 9 ane-matmul-inner warnings for 3 layers (as Qwen3's fixture
# of that head_dim); head_dim 16, one bucket: one a layer
compiled llama_tiny tests/fixtures/llama/tiny_llama3 "In the beginning" 9 llama
grep -q '"rope_type": "llama3"' "$TMP/b_llama_tiny/manifest.json" &&
    ! grep -q "q_norm" "$TMP/b_llama_tiny/layer_00/model.mil"
report llama_manifest_keeps_rope_scaling_and_no_qk_norm $? "$(grep -c q_norm "$TMP/b_llama_tiny/layer_00/model.mil")"
compiled llama_demo "$D" "In the beginning" 0 llama
compiled gemma3_text tests/fixtures/gemma3/tiny_gemma3_text In 4 gemma3_text --buckets 32
compiled gemma3_mm tests/fixtures/gemma3/tiny_gemma3_mm In 3 gemma3_text --buckets 32
# a sliding layer's cache is the 64-slot window, the global one (layer 2)
# the context
shapes=$(python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))
print(' '.join([str(i['shape'][3]) for f in p['functions'] for i in f['inputs']
                if i['name'] == 'k_cache'][0] for p in m['programs'] if p['role'] == 'layer'))
" "$TMP/b_gemma3_text/manifest.json")
[ "$shapes" = "64 64 128 64" ]
report gemma3_sliding_layers_have_window_caches $? "k_cache lengths: $shapes"

# a device that refuses every construct: each Gemma kernel falls back to the
# CPU (the interpreter on the same programs) and the text is the cpu's
"$BIN" run -t 1 -m tests/fixtures/gemma3/tiny_gemma3_text -p In --temp 0 -n 64 >"$TMP/cpu" 2>/dev/null
same_as_cpu run_gemma3_text_ane_reject_all_equals_cpu "$TMP/b_gemma3_text" In --backend ane \
    --ane-device fake:reject=all

# --kv-update host on Gemma: the host writes a sliding layer's new columns
# into its window (position p in slot p mod W), not at p of a full-context
# cache: 64 tokens wrap the window of this fixture (sliding_window 4);
# writing at p ran past the window's buffer
B="$TMP/b_gemma3_host"
"$BIN" compile -m tests/fixtures/gemma3/tiny_gemma3_text -o "$B" --buckets 32 --kv-update host \
    >/dev/null 2>&1
same_as_cpu run_gemma3_host_kv_mil_equals_cpu "$B" In --backend mil
same_as_cpu run_gemma3_host_kv_ane_equals_cpu "$B" In --backend ane --ane-device fake

# the grouped attention form and one kernel per layer on the Llama layout
# (no q/k norm before the grouped RoPE)
B="$TMP/b_grouped"
"$BIN" compile -m "$D" -o "$B" --ctx 128 --attention grouped --kernels-per-layer 1 -t 1 \
    >/dev/null 2>&1
"$BIN" run -t 1 -m "$D" -p "In the beginning" --temp 0 -n 64 >"$TMP/cpu" 2>/dev/null
same_as_cpu run_llama_grouped_one_kernel_mil_equals_cpu "$B" "In the beginning" --backend mil

# Gemma's head stays on the ANE: --lm-head cpu is one line, no bundle
"$BIN" compile -m tests/fixtures/gemma3/tiny_gemma3_text -o "$TMP/gcpu" --lm-head cpu \
    >/dev/null 2>"$TMP/err"
[ $? != 0 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q "lm-head cpu" "$TMP/err" && [ ! -e "$TMP/gcpu" ]
report compile_gemma3_refuses_cpu_head $? "$(cat "$TMP/err")"
