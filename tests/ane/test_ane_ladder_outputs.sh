#!/bin/sh
# The ladder's outputs rung (docs/ane-bridge.md, "A device that says no"):
# a function of several outputs that the device refuses even alone runs as
# one program per output -- the function's own MIL with that output only and
# the ops it needs, the program's weight.bin hard-linked: a re-lowering from
# the bundle alone. On the fake device: under reject=multi-output every
# kernel of models/demo and of a Qwen3.5 fixture goes back on the device;
# under reject=all qkv and kv do (45/60 instead of 15/60 without the rung,
# the ladder stopping before the relower rung).
# The text is the cpu backend's (fp32 from the checkpoint) every time.
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"
N=32
P="In the beginning"
# the refused functions on the MIL interpreter, so that the placement counts
# them per function (by default a layer with one runs whole on the CPU
# engine's kernels: tests/engine/test_engine_ane_cpu_layer.c)
export NECTAR_ANE_CPU=interp
# model, bundle: compile, and the cpu backend's text into $2.cpu
prepare() {
    "$BIN" compile -m "$1" -o "$2" $T >/dev/null 2>"$TMP/ce" || return 1
    "$BIN" run $T -m "$1" -p "$P" --temp 0 -n $N >"$2.cpu" 2>/dev/null
}
# bundle, device settings, [profile]: $TMP/o text, $TMP/e stderr
run_ane() {
    NECTAR_ANE_PROFILE=${3:-off} "$BIN" run $T --backend ane --ane-device "fake:$2" -m "$1" \
        -p "$P" --temp 0 -n $N >"$TMP/o" 2>"$TMP/e"
}
B="$TMP/demo.ane"
if ! prepare models/demo "$B"; then
    fail compile_demo "$(cat "$TMP/ce")"
    exit 0
fi
layers=$(ls -d "$B"/layer_* | wc -l)
fns=$((layers * 12))

run_ane "$B" reject=multi-output
if cmp -s "$TMP/o" "$B.cpu" &&
    grep -q "layers 0-$((layers - 1)): $fns/$fns kernels on the ANE ($((layers * 6)) as programs of their own) ($((layers * 6)) as a program per output)" "$TMP/e"; then
    pass "multi_output_refused_every_kernel_on_device_demo ($fns/$fns)"
else
    fail multi_output_refused_every_kernel_on_device_demo "$(head -c 600 "$TMP/e")"
fi
# the pieces: one output each, and only what it needs (v_new: its conv, no RoPE)
V="$B/ladder/layer_00_qkv_s32__v_new/model.mil"
Q="$B/ladder/layer_00_qkv_s32__q/model.mil"
if [ -f "$V" ] && [ -f "$Q" ] && grep -q -- "-> (v_new);" "$V" && grep -q -- "-> (q);" "$Q" &&
    [ "$(grep -c " = conv(" "$V")" -eq 1 ] && ! grep -q "rope_rot\|q_proj" "$V" &&
    grep -q "q_proj" "$Q" && ! grep -q "v_new = conv" "$Q" &&
    [ "$(ls -i "$B/layer_00/weights/weight.bin" | awk '{print $1}')" = \
        "$(ls -i "$B/ladder/layer_00_qkv_s32__q/weights/weight.bin" | awk '{print $1}')" ]; then
    pass pieces_hold_one_output_and_the_ops_it_needs
else
    fail pieces_hold_one_output_and_the_ops_it_needs "$(ls "$B/ladder" | head -5)"
fi

# the outputs rung's own share: the ladder up to it, with and without it
# (the relower rung after it places the rest: tests/ane/test_ane_relower.sh)
echo '{"ladder_order": ["program", "function", "outputs", "cpu"]}' >"$TMP/with.json"
run_ane "$B" reject=all "$TMP/with.json"
all_with=$(sed -n 's/.*layers 0-[0-9]*: \([0-9]*\)\/[0-9]* kernels on the ANE.*/\1/p' "$TMP/e")
ok_with=$(cmp -s "$TMP/o" "$B.cpu" && echo y)
echo '{"ladder_order": ["program", "function", "cpu"]}' >"$TMP/order.json"
run_ane "$B" reject=all "$TMP/order.json"
all_without=$(sed -n 's/.*layers 0-[0-9]*: \([0-9]*\)\/[0-9]* kernels on the ANE.*/\1/p' "$TMP/e")
if [ "$ok_with" = y ] && cmp -s "$TMP/o" "$B.cpu" && [ "$all_with" = $((layers * 9)) ] &&
    [ "$all_without" = $((layers * 3)) ]; then
    pass "reject_all_outputs_rung_places_qkv_and_kv ($all_with/$fns, $all_without without the rung)"
else
    fail reject_all_outputs_rung_places_qkv_and_kv "with $all_with without $all_without"
fi

# the rung is remembered: the second run compiles the pieces straight away
PR="$TMP/p.json"
run_ane "$B" reject=multi-output "$PR"
first=$(sed -n 's/.*; \([0-9]*\) programs compiled or loaded.*/\1/p' "$TMP/e")
run_ane "$B" reject=multi-output "$PR"
second=$(sed -n 's/.*; \([0-9]*\) programs compiled or loaded.*/\1/p' "$TMP/e")
if cmp -s "$TMP/o" "$B.cpu" && grep -q '"outputs": {' "$PR" &&
    grep -q '"split_functions": "qkv_s32,kv_s32,qkv_s64,kv_s64,qkv_s128,kv_s128"' "$PR" &&
    [ -n "$first" ] && [ "$second" -eq $((first - layers - layers * 6)) ]; then
    pass "outputs_rung_recorded_second_run_skips_refusals ($first then $second compiles)"
else
    fail outputs_rung_recorded_second_run_skips_refusals "first $first second $second"
fi

Q35="$TMP/q35.ane"
if prepare tests/fixtures/qwen35/tiny_eos_mid "$Q35"; then
    run_ane "$Q35" reject=multi-output
    if cmp -s "$TMP/o" "$Q35.cpu" &&
        grep -q "layers 0-[0-9]*: \([0-9]*\)/\1 kernels on the ANE .*as a program per output" "$TMP/e"; then
        pass multi_output_refused_every_kernel_on_device_qwen35
    else
        fail multi_output_refused_every_kernel_on_device_qwen35 "$(head -c 600 "$TMP/e")"
    fi
else
    fail compile_qwen35 "$(cat "$TMP/ce")"
fi
