#!/bin/sh
# The ladder's relower rung (docs/ane-bridge.md, "Re-lowering from the
# bundle"): a function the device refuses in every view of the compiled
# program is lowered again from the bundle alone into a form that avoids
# the refused construct, and runs on the device. Here an LM head whose conv
# is wider than 16,384 channels (a random tiny shape with a 40,000-row
# vocabulary, compiled --head-rows 65536) under fake:reject=wide-conv: the
# head is re-lowered as convs over row slices of its weight concatenated
# into the same logits_0 (before the rung: the head ran on the CPU). And a
# KV update refused for its gather (reject=gather, elementwise-only) goes
# back on the device in the onehot form. The text is the cpu backend's
# (fp32 from the checkpoint) every time.
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"
N=32
P="In the beginning"
# the refused functions on the MIL interpreter, so that the placement
# counts them per function (by default a layer with one runs whole on the
# CPU engine's kernels: tests/ane/test_ane_cpu_layer.sh)
export NECTAR_ANE_CPU=interp
M="$TMP/wide"
B="$TMP/wide.ane"
if ! "$BIN" gen-random --like tiny --vocab 40000 --tokenizer tests/fixtures/qwen3-tokenizer \
    "$M" >/dev/null 2>"$TMP/ce" ||
    ! "$BIN" compile -m "$M" -o "$B" --head-rows 65536 $T >/dev/null 2>>"$TMP/ce"; then
    fail compile_wide_head "$(cat "$TMP/ce")"
    exit 0
fi
"$BIN" run $T -m "$M" -p "$P" --temp 0 -n $N >"$TMP/cpu" 2>/dev/null
# device settings, [profile]: $TMP/o text, $TMP/e stderr
run_ane() {
    NECTAR_ANE_PROFILE=${2:-off} "$BIN" run $T --backend ane --ane-device "fake:$1" -m "$B" \
        -p "$P" --temp 0 -n $N >"$TMP/o" 2>"$TMP/e"
}
compiles() { sed -n 's/.*; \([0-9]*\) programs compiled or loaded.*/\1/p' "$TMP/e"; }

# before the rung (a ladder order without it): the head on the CPU
echo '{"ladder_order": ["program", "function", "outputs", "cpu"]}' >"$TMP/order.json"
run_ane reject=wide-conv "$TMP/order.json"
if cmp -s "$TMP/o" "$TMP/cpu" && grep -q "head: 0/1 kernels on the ANE, 1 on the CPU (head_00/model.mil refused: .*conv of 40000 channels" "$TMP/e"; then
    pass wide_conv_without_the_rung_head_on_cpu
else
    fail wide_conv_without_the_rung_head_on_cpu "$(head -c 600 "$TMP/e")"
fi

# the rung: every kernel on the device, the head re-lowered
V="$B/ladder/head_00_head_s32_relowered"
run_ane reject=wide-conv
if cmp -s "$TMP/o" "$TMP/cpu" &&
    grep -q "layers 0-1: 24/24 kernels on the ANE; head: 1/1 kernels on the ANE (1 re-lowered: head rows 16384) (head_00/model.mil refused: " "$TMP/e"; then
    pass "wide_conv_relowered_head_on_device_gives_cpu_text ($(compiles) compiles)"
else
    fail wide_conv_relowered_head_on_device_gives_cpu_text "$(head -c 600 "$TMP/e")"
fi
# the view: three convs of at most 16,384 rows into one logits_0, its own weight.bin
if [ -f "$V/model.mil" ] && [ "$(grep -c " = conv(" "$V/model.mil")" -eq 3 ] &&
    grep -q "tensor<fp16, \[1, 13334, 1, 32\]> logits_0_rows0 = conv(" "$V/model.mil" &&
    grep -q "tensor<fp16, \[1, 40000, 1, 32\]> logits_0 = concat(" "$V/model.mil" &&
    "$BIN" mil check "$V/model.mil" >/dev/null 2>&1 &&
    [ "$(ls -i "$B/head_00/weights/weight.bin" | awk '{print $1}')" != \
        "$(ls -i "$V/weights/weight.bin" | awk '{print $1}')" ]; then
    pass relowered_head_is_row_slices_concatenated
else
    fail relowered_head_is_row_slices_concatenated "$(grep -c " = conv(" "$V/model.mil" 2>&1)"
fi

# with every rule the head still goes back on the device (the slices break none)
run_ane reject=all
if cmp -s "$TMP/o" "$TMP/cpu" && grep -q "head: 1/1 kernels on the ANE (1 re-lowered: head rows 16384)" "$TMP/e"; then
    pass reject_all_relowered_head_on_device
else
    fail reject_all_relowered_head_on_device "$(head -c 600 "$TMP/e")"
fi

# remembered: the profile records the rung, the next run starts there
PR="$TMP/p.json"
run_ane reject=wide-conv "$PR"
first=$(compiles)
run_ane reject=wide-conv "$PR"
second=$(compiles)
if cmp -s "$TMP/o" "$TMP/cpu" && grep -q '"relowered_functions": "head_s32"' "$PR" &&
    grep -q '"forms": "head rows 16384"' "$PR" && grep -q '"start": "relower"' "$PR" &&
    [ "$first" = 4 ] && [ "$second" = 3 ]; then
    pass "relower_rung_recorded_second_run_starts_there ($first then $second compiles)"
else
    fail relower_rung_recorded_second_run_starts_there "first $first second $second"
fi

# from the bundle alone: the hook reads the program's weight.bin and the
# manifest, never the checkpoint (no file-format reader, no source_dir)
if ! grep -q '#include "io/\|source_dir\|hf_weights\|safetensors' src/engine/bundle_relower.c; then
    pass relower_hook_reads_only_the_bundle
else
    fail relower_hook_reads_only_the_bundle "src/engine/bundle_relower.c names the checkpoint"
fi

# gen-random --vocab below the shape's special ids: one line, nothing written
if ! "$BIN" gen-random --like qwen3-0.6b --vocab 1000 "$TMP/bad" >"$TMP/o" 2>"$TMP/e" &&
    [ "$(wc -l <"$TMP/e")" -eq 1 ] && grep -q -- "--vocab 1000" "$TMP/e" && [ ! -e "$TMP/bad" ]; then
    pass gen_random_vocab_below_special_ids_is_one_line
else
    fail gen_random_vocab_below_special_ids_is_one_line "$(cat "$TMP/e")"
fi

# The KV update: a bundle compiled --kv-update gather under reject=gather
# (and elementwise-only: a gather and a select) gets its kv functions
# re-lowered in the onehot form, which has the same I/O; with three
# kernels per layer the fused kvattn, whose weights (o_proj, ...) are read
# back from its program's weight.bin
"$BIN" run $T -m models/demo -p "$P" --temp 0 -n $N >"$TMP/demo.cpu" 2>/dev/null
for kpl in 4 3; do
    B="$TMP/g$kpl.ane"
    if ! "$BIN" compile -m models/demo -o "$B" --kv-update gather --kernels-per-layer $kpl $T \
        >/dev/null 2>"$TMP/ce"; then
        fail "compile_gather_$kpl" "$(cat "$TMP/ce")"
        continue
    fi
    fns=$((kpl * 15)) # 5 layers x 3 buckets
    kern=$([ $kpl = 4 ] && echo kv || echo kvattn)
    run_ane reject=gather "$TMP/order.json"
    without=$(sed -n 's/.*layers 0-4: \([0-9]*\)\/[0-9]* kernels on the ANE.*/\1/p' "$TMP/e")
    ok_without=$(cmp -s "$TMP/o" "$TMP/demo.cpu" && echo y)
    for r in gather elementwise-only; do
        [ $kpl = 3 ] && [ $r = elementwise-only ] && continue # kvattn holds a matmul
        run_ane reject=$r
        if [ "$ok_without" = y ] && [ "$without" = $((fns - 15)) ] && cmp -s "$TMP/o" "$TMP/demo.cpu" &&
            grep -q "layers 0-4: $fns/$fns kernels on the ANE ([0-9]* as programs of their own) (15 re-lowered: kv update onehot) (layer_00/model.mil refused: .*function '${kern}_s32'" "$TMP/e"; then
            pass "reject_${r}_kv_relowered_onehot_kpl${kpl} ($fns/$fns on the ANE, $without without the rung)"
        else
            fail "reject_${r}_kv_relowered_onehot_kpl${kpl}" "without $without: $(head -c 600 "$TMP/e")"
        fi
    done
    # every rule: the re-lowered kv (two outputs) is refused too, and goes
    # on the device as a program per output of the re-lowered program (and
    # attn re-lowered grouped: every kernel on the device)
    if [ $kpl = 4 ]; then
        run_ane reject=all
        if cmp -s "$TMP/o" "$TMP/demo.cpu" &&
            grep -q "layers 0-4: 60/60 kernels on the ANE (15 as programs of their own) (30 as a program per output) (30 re-lowered: kv update onehot, attention grouped) " "$TMP/e" &&
            [ -f "$B/ladder/layer_00_kv_s32_relowered__kv_s32__v_cache_out/model.mil" ]; then
            pass reject_all_relowered_kv_split_per_output
        else
            fail reject_all_relowered_kv_split_per_output "$(head -c 600 "$TMP/e")"
        fi
    fi
    # every rule on kvattn (gather, the broadcast attention, two outputs):
    # the hook's third candidate, both changes, as a program per output;
    # remembered, so the next run starts at that candidate, and the forms
    # it took recorded as accepted (what compile --ane-profile reads)
    if [ $kpl = 3 ]; then
        PR3="$TMP/p3.json"
        run_ane reject=all "$PR3"
        first=$(compiles)
        ok1=$(cmp -s "$TMP/o" "$TMP/demo.cpu" && echo y)
        run_ane reject=all "$PR3"
        second=$(compiles)
        if [ "$ok1" = y ] && cmp -s "$TMP/o" "$TMP/demo.cpu" &&
            grep -q "layers 0-4: 45/45 kernels on the ANE (15 as programs of their own) (30 as a program per output) (15 re-lowered: kv update onehot + attention grouped) " "$TMP/e" &&
            grep -q '"attempts": "2,2,2"' "$PR3" && [ -n "$first" ] && [ "$second" -lt "$first" ] &&
            grep -A1 '"onehot": {' "$PR3" | grep -q '"ok": 15' &&
            grep -A1 '"grouped": {' "$PR3" | grep -q '"ok": 15'; then
            pass "reject_all_kvattn_relowered_both_forms_remembered ($first then $second compiles)"
        else
            fail reject_all_kvattn_relowered_both_forms_remembered "first $first second $second: $(head -c 500 "$TMP/e")"
        fi
    fi
    V="$B/ladder/layer_00_${kern}_s32_relowered/model.mil"
    if [ -f "$V" ] && ! grep -q "gather(" "$V" && grep -q "k_spread_placed = matmul(" "$V" &&
        { [ $kpl = 4 ] || grep -q "o_proj = conv(" "$V"; }; then
        pass "relowered_${kern}_is_onehot"
    else
        fail "relowered_${kern}_is_onehot" "$(ls "$B/ladder" 2>&1 | head -3)"
    fi
done

# RoPE and the attention layout: a broadcast matmul refused
# (reject=broadcast-matmul) -- the attn kernel is re-lowered in the grouped
# form with q transposed in and out (qkv and o_proj as compiled), a qkv in
# the --rope matmul form as a conv, a fused qkva in the grouped form with
# q_proj's rows and o_proj's columns permuted from the bundle's weights.
# With every rule, every layer kernel of the default bundle on the device.
compile_demo() { # label, options
    "$BIN" compile -m models/demo -o "$TMP/$1.ane" $2 $T >/dev/null 2>"$TMP/ce" ||
        fail "compile_$1" "$(cat "$TMP/ce")"
}
compile_demo d ""
compile_demo rm "--rope matmul"
compile_demo k2 "--kernels-per-layer 2 --rope matmul"
# label, rule, expected placement
check_relower() {
    B="$TMP/$1.ane"
    run_ane "reject=$2"
    if cmp -s "$TMP/o" "$TMP/demo.cpu" && grep -q "layers 0-4: $3" "$TMP/e"; then
        pass "reject_${2}_relowered_$1 ($3)"
    else
        fail "reject_${2}_relowered_$1" "$(head -c 700 "$TMP/e")"
    fi
}
check_relower d broadcast-matmul "60/60 kernels on the ANE (45 as programs of their own) (15 re-lowered: attention grouped) "
check_relower rm broadcast-matmul "60/60 kernels on the ANE (30 as programs of their own) (30 re-lowered: rope conv, attention grouped) "
check_relower k2 broadcast-matmul "30/30 kernels on the ANE (15 as programs of their own) (15 re-lowered: rope conv + attention grouped) "
check_relower d all "60/60 kernels on the ANE (15 as programs of their own) (30 as a program per output) (15 re-lowered: attention grouped) "
A="$TMP/d.ane/ladder/layer_00_attn_s32_relowered/model.mil"
K="$TMP/k2.ane/ladder/layer_00_qkva_s32_relowered/model.mil"
if grep -q "q_by_dim = transpose(" "$A" && grep -q "attn_by_head = transpose(" "$A" &&
    ! grep -q "transpose(" "$K" && grep -q "q_rope_rot_flat = conv(" "$K" &&
    grep -q "tensor<fp16, \[1, 2, 64, 64\]> q_groups = reshape(" "$K"; then
    pass relowered_attention_is_grouped
else
    fail relowered_attention_is_grouped "$(grep -c transpose "$A" "$K" 2>&1)"
fi
