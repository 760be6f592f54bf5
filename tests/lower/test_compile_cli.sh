#!/bin/sh
# `nectar compile` and `nectar run/chat --backend mil` ($NECTAR_BIN) on the
# tiny fixtures: the bundle layout and its check by `nectar mil check
# --target ane`, greedy text through the interpreter equal to HF's
# (tests/fixtures/gen/e2e, independent of nectar) and to the cpu backend,
# --dump-layers from both backends, chat through a bundle, and one-line
# errors with no partial bundle for bad input.
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"
FIX=tests/fixtures/gen/e2e
M=tests/fixtures/qwen3/tiny_gqa2

if "$BIN" compile -m $M -o "$TMP/b" --ctx 128 --buckets 32,64 $T >"$TMP/out" 2>"$TMP/err" &&
    grep -q "13 kernels per token" "$TMP/err" && [ -f "$TMP/b/manifest.json" ] &&
    [ -f "$TMP/b/layer_00/model.mil" ] && [ -f "$TMP/b/layer_02/weights/weight.bin" ] &&
    [ -f "$TMP/b/head_00/model.mil" ] && [ -f "$TMP/b/tokenizer.json" ]; then
    pass compile_writes_bundle
else
    fail compile_writes_bundle "$(cat "$TMP/out" "$TMP/err")"
fi

if "$BIN" mil check --target ane "$TMP/b" >"$TMP/out" 2>&1; then
    pass compile_bundle_passes_mil_check_ane
else
    fail compile_bundle_passes_mil_check_ane "$(grep error "$TMP/out" | head -3)"
fi

# no emitted program gathers with int32 indices (the ANE compiler refuses
# them: docs/ane-rules.md); read off the MIL text by tests/lower/gather_indices.awk,
# for a Qwen3 bundle of the gather KV update (the default, onehot, has no
# gather) and an encoder bundle
AWK=tests/lower/gather_indices.awk
"$BIN" compile -m tests/fixtures/modernbert/mb_mlm -o "$TMP/enc" --buckets 32 --batches 1 >/dev/null 2>&1
"$BIN" compile -m $M -o "$TMP/bg" --ctx 128 --buckets 32,64 --kv-update gather $T >/dev/null 2>&1
awk -f $AWK "$TMP"/bg/*/model.mil >"$TMP/gq" 2>&1
awk -f $AWK "$TMP"/enc/*/model.mil >"$TMP/ge"
if [ -s "$TMP/gq" ] && ! grep -qv " uint16$" "$TMP/gq" && ! grep -q " int32$" "$TMP/ge" &&
    [ -f "$TMP/enc/encoder/model.mil" ]; then
    pass compile_emits_no_int32_gather_indices
else
    fail compile_emits_no_int32_gather_indices "$(grep -v " uint16$" "$TMP/gq" "$TMP/ge" | head -3)"
fi
printf 'func main<ios18>(tensor<int32, [4]> i, tensor<fp16, [8]> t) {\n    tensor<fp16, [4]> y = gather(axis = a, indices = i, x = t)[name = string("g")];\n' >"$TMP/neg.mil"
if [ "$(awk -f $AWK "$TMP/neg.mil" | cut -d' ' -f3)" = int32 ]; then
    pass gather_indices_awk_sees_int32
else
    fail gather_indices_awk_sees_int32 "$(awk -f $AWK "$TMP/neg.mil")"
fi

# greedy continuation through the bundle == HF's text for this model's prompts
n=0
for p in "$FIX"/run_tiny_gqa2_*.prompt; do
    base=${p%.prompt}
    n=$((n + 1))
    if "$BIN" run $T --backend mil -m "$TMP/b" -f "$p" --temp 0 -n 24 >"$TMP/out" 2>"$TMP/err" &&
        cmp -s "$TMP/out" "$base.expected"; then
        pass "run_mil_greedy_matches_hf_$(basename "$base")"
    else
        fail "run_mil_greedy_matches_hf_$(basename "$base")" "got '$(cat "$TMP/out")' ($(tail -1 "$TMP/err"))"
    fi
done
[ "$n" -gt 0 ] || fail run_mil_greedy_matches_hf "no fixture prompts in $FIX"

# 64 greedy tokens and per-layer dumps: mil == cpu
"$BIN" run $T -m $M -p "In the beginning" --temp 0 -n 64 --dump-layers "$TMP/dc" >"$TMP/cpu" 2>"$TMP/err1"
"$BIN" run $T --backend mil -m "$TMP/b" -p "In the beginning" --temp 0 -n 64 --dump-layers "$TMP/dm" \
    >"$TMP/mil" 2>"$TMP/err2"
if [ -s "$TMP/cpu" ] && cmp -s "$TMP/cpu" "$TMP/mil"; then
    pass run_mil_64_tokens_equal_cpu
else
    fail run_mil_64_tokens_equal_cpu "cpu '$(cat "$TMP/cpu")' mil '$(cat "$TMP/mil")' $(tail -1 "$TMP/err2")"
fi
ok=1
for l in 00 01 02; do
    [ -f "$TMP/dc/layer_$l.npy" ] && [ -f "$TMP/dm/layer_$l.npy" ] &&
        [ "$(wc -c <"$TMP/dc/layer_$l.npy")" = "$(wc -c <"$TMP/dm/layer_$l.npy")" ] || ok=0
done
[ -f "$TMP/dc/layer_03.npy" ] && ok=0
if [ $ok = 1 ]; then pass run_dump_layers_both_backends; else fail run_dump_layers_both_backends "$(ls "$TMP/dc" "$TMP/dm")"; fi

# chat through the bundle: two turns (the second reuses the cached prefix),
# greedy, the same replies as the cpu backend
printf 'Hello\nAnd then?\n' | "$BIN" chat $T -m $M --temp 0 -n 12 >"$TMP/chat_cpu" 2>"$TMP/err1"
if printf 'Hello\nAnd then?\n' | "$BIN" chat $T --backend mil -m "$TMP/b" --temp 0 -n 12 \
    >"$TMP/chat_mil" 2>"$TMP/err" && [ -s "$TMP/chat_cpu" ] && cmp -s "$TMP/chat_cpu" "$TMP/chat_mil"; then
    pass chat_mil_two_turns_equal_cpu
else
    fail chat_mil_two_turns_equal_cpu "cpu '$(cat "$TMP/chat_cpu")' mil '$(cat "$TMP/chat_mil")' $(tail -1 "$TMP/err")"
fi

# errors: one line, exit 1 or 2, no partial bundle
check_err() { # name, expected substring, command...
    name=$1
    want=$2
    shift 2
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        fail "$name" "succeeded"
    elif grep -q "$want" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then
        pass "$name"
    else
        fail "$name" "$(cat "$TMP/err")"
    fi
}
check_err compile_bad_ctx "multiple of 32" "$BIN" compile -m $M -o "$TMP/x1" --ctx 100
check_err compile_bad_bucket "not a multiple of 32" "$BIN" compile -m $M -o "$TMP/x2" --buckets 32,48
check_err compile_bucket_over_ctx "exceeds" "$BIN" compile -m $M -o "$TMP/x3" --ctx 64 --buckets 128
check_err compile_missing_model "no such model folder" "$BIN" compile -m "$TMP/none" -o "$TMP/x4"
check_err compile_bad_lm_head "is not one of ane|cpu" "$BIN" compile -m $M -o "$TMP/x5" --lm-head gpu
mkdir -p "$TMP/notbundle" && echo keep >"$TMP/notbundle/file"
check_err compile_refuses_foreign_folder "not a nectar bundle" "$BIN" compile -m $M -o "$TMP/notbundle"
# a checkpoint missing a tensor: fails naming it, nothing written
mkdir -p "$TMP/broken" && cp $M/config.json $M/tokenizer.json "$TMP/broken/"
check_err compile_missing_weights "safetensors" "$BIN" compile -m "$TMP/broken" -o "$TMP/x6"
# config.json and the tensors disagree: the error names the tensor and the shape
mkdir -p "$TMP/wrong" && cp $M/* "$TMP/wrong/" &&
    sed 's/"intermediate_size": 96/"intermediate_size": 97/' $M/config.json >"$TMP/wrong/config.json"
check_err compile_shape_mismatch "mlp.gate_proj.weight: shape does not match config.json (expected \[97, 64\])" \
    "$BIN" compile -m "$TMP/wrong" -o "$TMP/x7"
if [ ! -e "$TMP/x1" ] && [ ! -e "$TMP/x7" ] && [ ! -e "$TMP/x4" ] && [ ! -e "$TMP/x6" ] && [ -f "$TMP/notbundle/file" ] &&
    [ -z "$(ls -d "$TMP"/x6.tmp* 2>/dev/null)" ]; then
    pass compile_failure_leaves_nothing
else
    fail compile_failure_leaves_nothing "$(ls "$TMP")"
fi
check_err run_mil_not_a_bundle "not a bundle (a model folder): run nectar compile" "$BIN" run --backend mil -m $M -p hi -n 1
check_err run_bad_backend "is not one of cpu|mil|ane" "$BIN" run --backend gpu -m $M -p hi -n 1
# the bundle's context is fixed at compile time (--ctx 128 above): another
# --ctx is refused in one line, the same one is accepted
check_err run_mil_ctx_differs_from_bundle "compiled for a context of 128" \
    "$BIN" run $T --backend mil -m "$TMP/b" --ctx 256 -p hi -n 1
if "$BIN" run $T --backend mil -m "$TMP/b" --ctx 128 -p hi --temp 0 -n 1 >"$TMP/out" 2>"$TMP/err"; then
    pass run_mil_ctx_equal_to_bundle
else
    fail run_mil_ctx_equal_to_bundle "$(cat "$TMP/err")"
fi

# recompiling over an existing bundle replaces it; --lm-head cpu runs the
# head from the checkpoint and gives the same greedy text
if "$BIN" compile -m $M -o "$TMP/b" --ctx 128 --lm-head cpu $T >/dev/null 2>"$TMP/err" &&
    [ ! -e "$TMP/b/head" ] && grep -q '"lm_head": "cpu"' "$TMP/b/manifest.json" &&
    "$BIN" run $T --backend mil -m "$TMP/b" -p "In the beginning" --temp 0 -n 64 >"$TMP/mil2" 2>>"$TMP/err" &&
    cmp -s "$TMP/cpu" "$TMP/mil2"; then
    pass compile_replaces_bundle_and_cpu_head_matches
else
    fail compile_replaces_bundle_and_cpu_head_matches "$(tail -2 "$TMP/err")"
fi

# every kernels-per-layer variant (4 qkv,kv,attn,mlp; 3 kv merged into attn;
# 2 qkva,mlp; 1 layer) in the gather KV form: passes `mil check --target ane`,
# gathers with no int32 index, has k * layers + 1 kernels per token, and gives the cpu
# backend's 64 greedy tokens ($TMP/cpu above) through the interpreter and
# through the fake ANE device
L=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['num_hidden_layers'])" $M/config.json)
for k in 3 2 1; do
    B="$TMP/k$k"
    if "$BIN" compile -m $M -o "$B" --ctx 128 --buckets 32,64 $T --kernels-per-layer $k \
        --kv-update gather >"$TMP/out" 2>"$TMP/err" &&
        grep -q "$((k * L + 1)) kernels per token" "$TMP/err" &&
        "$BIN" mil check --target ane -q "$B" >"$TMP/chk" 2>&1 &&
        awk -f $AWK "$B"/*/model.mil >"$TMP/gk" && [ -s "$TMP/gk" ] && ! grep -qv " uint16$" "$TMP/gk"; then
        pass "compile_kernels_per_layer_${k}_passes_ane_rules"
    else
        fail "compile_kernels_per_layer_${k}_passes_ane_rules" "$(cat "$TMP/err" "$TMP/chk" | tail -3)"
    fi
    for be in mil ane; do
        dev=""
        [ $be = ane ] && dev="--ane-device fake"
        # shellcheck disable=SC2086
        "$BIN" run $T --backend $be $dev -m "$B" -p "In the beginning" --temp 0 -n 64 >"$TMP/k_out" 2>"$TMP/err"
        if [ -s "$TMP/cpu" ] && cmp -s "$TMP/cpu" "$TMP/k_out"; then
            pass "run_kernels_per_layer_${k}_${be}_equals_cpu"
        else
            fail "run_kernels_per_layer_${k}_${be}_equals_cpu" "'$(cat "$TMP/k_out")' $(tail -1 "$TMP/err")"
        fi
    done
done
# one kernel per layer with an odd layer count leaves the last activation in
# the second surface: the cpu head must read it from there (ane_plan.x_final)
"$BIN" compile -m $M -o "$TMP/k1c" --ctx 128 --buckets 32,64 $T --kernels-per-layer 1 --lm-head cpu >/dev/null 2>&1
"$BIN" run $T --backend ane --ane-device fake -m "$TMP/k1c" -p "In the beginning" --temp 0 -n 64 >"$TMP/k_out" 2>"$TMP/err"
if [ $((L % 2)) = 1 ] && [ -s "$TMP/cpu" ] && cmp -s "$TMP/cpu" "$TMP/k_out"; then
    pass run_kernels_per_layer_1_cpu_head_ane_equals_cpu
else
    fail run_kernels_per_layer_1_cpu_head_ane_equals_cpu "L=$L '$(cat "$TMP/k_out")' $(tail -1 "$TMP/err")"
fi
check_err compile_bad_kernels_per_layer "kernels-per-layer" "$BIN" compile -m $M -o "$TMP/x9" --kernels-per-layer 5
