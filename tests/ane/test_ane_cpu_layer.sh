#!/bin/sh
# A layer the device refuses at every rung runs whole on the CPU engine's
# kernels (docs/engine.md, "A refused layer on the CPU engine's kernels"):
# `nectar run --backend ane --ane-device fake:reject=RULE` on a Qwen3.5
# fixture with linear and full-attention layers (a 201-token prompt: four
# chunks, then 64 greedy tokens) prints the cpu backend's text (fp32 from
# the checkpoint, an engine sharing no code with the bundle path) for every
# rule alone and all together, and says which layers ran on the CPU
# engine's kernels. A device that refuses one layer only (layer 1, as a
# probe profile recorded it) keeps the others: "layers 0, 2: .. on the
# ANE; layer 1: CPU engine kernels"; the same on Gemma 3 (Qwen3's decoder,
# sliding-window layers) for its global or its sliding layers' program.
# models/demo under every rule:
# tests/ane/test_fake_reject.sh.
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"
M=tests/fixtures/qwen35/tiny_vl_tied
B="$TMP/q35.ane"
P=$(cat "$M/run_2.prompt")
if ! "$BIN" compile -m "$M" -o "$B" --ctx 512 --buckets 32,64 $T >/dev/null 2>"$TMP/e"; then
    fail compile_q35 "$(cat "$TMP/e")"
    exit 0
fi
"$BIN" run $T -m "$M" -p "$P" --temp 0 -n 64 >"$TMP/cpu" 2>"$TMP/e"
if ! grep -q "generated 64 tokens" "$TMP/e"; then
    fail cpu_reference_has_64_tokens "$(tail -1 "$TMP/e")"
fi
export NECTAR_ANE_PROFILE="$TMP/profile.json"
for r in gather multi-function mixed-shapes multi-output elementwise-only broadcast-matmul wide-conv all; do
    "$BIN" run $T --backend ane --ane-device "fake:reject=$r" -m "$B" -p "$P" --temp 0 -n 64 \
        >"$TMP/o" 2>"$TMP/e"
    used=no
    grep -q "layers 0-2: CPU engine kernels (layer_00/model.mil refused: " "$TMP/e" && used=yes
    # the rules that refuse some function at every rung: all, broadcast-matmul
    want=no
    case $r in all | broadcast-matmul) want=yes ;; esac
    if cmp -s "$TMP/o" "$TMP/cpu" && [ $used = $want ] && ! grep -q " on the CPU (" "$TMP/e"; then
        pass "reject_${r}_gives_cpu_text_cpu_kernels_$used"
    else
        fail "reject_${r}_gives_cpu_text_cpu_kernels_$want" "$(head -c 600 "$TMP/e")"
    fi
done

# one refused layer: layer 1's outcome under reject=all, as the profile of
# a device that takes layers 0 and 2 would hold it (a ladder without the
# relower rung, which would put its refused functions back on this fake)
NORELOWER='"ladder_order": ["program", "function", "outputs", "cpu"]'
if command -v jq >/dev/null 2>&1; then
    jq ".ladder[\"fake:reject=all\"] | with_entries(select(.value.paths[0] == \"layer_01/model.mil\"))
        | {$NORELOWER, ladder: {fake: .}}" "$NECTAR_ANE_PROFILE" >"$TMP/one.json"
    NECTAR_ANE_PROFILE="$TMP/one.json" "$BIN" run $T --backend ane --ane-device fake -m "$B" -p "$P" \
        --temp 0 -n 64 >"$TMP/o" 2>"$TMP/e"
    if cmp -s "$TMP/o" "$TMP/cpu" &&
        grep -q "layers 0, 2: 10/10 kernels on the ANE; layer 1: CPU engine kernels (layer_01/model.mil refused: .*(as recorded in the profile))" "$TMP/e"; then
        pass one_refused_layer_on_cpu_kernels_between_device_layers
    else
        fail one_refused_layer_on_cpu_kernels_between_device_layers "$(head -c 600 "$TMP/e")"
    fi
    # the same on Qwen3's decoder: Gemma 3's global layer 2 (its program
    # differs from the sliding layers'), or the sliding layers 0, 1 and 3
    G=tests/fixtures/gemma3/tiny_gemma3_text
    "$BIN" compile -m "$G" -o "$TMP/g.ane" --buckets 32 $T >/dev/null 2>&1
    "$BIN" run $T -m "$G" -p In --temp 0 -n 64 >"$TMP/g.cpu" 2>/dev/null
    echo "{$NORELOWER}" >"$TMP/g.json"
    NECTAR_ANE_PROFILE="$TMP/g.json" "$BIN" run $T --backend ane --ane-device fake:reject=all \
        -m "$TMP/g.ane" -p In --temp 0 -n 2 >/dev/null 2>&1
    for keep in "layer_02:layers 0-1, 3: 12/12 kernels on the ANE; layer 2: CPU engine kernels" \
        "layer_00:layer 2: 4/4 kernels on the ANE; layers 0-1, 3: CPU engine kernels"; do
        jq --arg k "${keep%%:*}/model.mil" ".ladder[\"fake:reject=all\"]
            | with_entries(select(.value.paths[0] == \$k)) | {$NORELOWER, ladder: {fake: .}}" \
            "$TMP/g.json" >"$TMP/gone.json"
        NECTAR_ANE_PROFILE="$TMP/gone.json" "$BIN" run $T --backend ane --ane-device fake \
            -m "$TMP/g.ane" -p In --temp 0 -n 64 >"$TMP/o" 2>"$TMP/e"
        if [ -s "$TMP/g.cpu" ] && cmp -s "$TMP/o" "$TMP/g.cpu" && grep -q "${keep#*:}" "$TMP/e"; then
            pass "gemma3_refused_${keep%%:*}_program_on_cpu_kernels_between_device_layers"
        else
            fail "gemma3_refused_${keep%%:*}_program_on_cpu_kernels_between_device_layers" \
                "$(head -c 600 "$TMP/e")"
        fi
    done
else
    echo "SKIP one_refused_layer_on_cpu_kernels_between_device_layers: jq is missing"
fi

# Qwen3's decoder reads the bundle's own fp16 weight.bin blobs, the
# grouped attention form's q_proj rows and o_proj columns put back in order
# (every program sent to the CPU: a ladder of the program rung alone under
# reject=multi-function); a palettized bundle's are not fp16 blobs, and
# Qwen3.5's decoder reads the checkpoint
"$BIN" run $T -m models/demo -p "In the beginning" --temp 0 -n 64 >"$TMP/demo.cpu" 2>/dev/null
for form in "--attention grouped:bundle's fp16" "--palettize 8:checkpoint's"; do
    opts=${form%%:*}
    rm -rf "$TMP/d.ane"
    echo '{"ladder_order": ["program", "cpu"]}' >"$TMP/order.json"
    "$BIN" compile -m models/demo -o "$TMP/d.ane" $opts $T >/dev/null 2>&1
    NECTAR_ANE_PROFILE="$TMP/order.json" "$BIN" run $T --backend ane \
        --ane-device fake:reject=multi-function -m "$TMP/d.ane" -p "In the beginning" --temp 0 \
        -n 64 >"$TMP/o" 2>"$TMP/e"
    name=$(echo "demo_${opts#--}_layers_on_the_${form#*:}_weights" | tr -d "'" | tr ' ' _)
    if cmp -s "$TMP/o" "$TMP/demo.cpu" && grep -q "layers 0-4: CPU engine kernels" "$TMP/e" &&
        grep -q "CPU engine kernels on the ${form#*:} weights" "$TMP/e"; then
        pass "$name"
    else
        fail "$name" "$(head -c 600 "$TMP/e")"
    fi
done
"$BIN" run $T --backend ane --ane-device fake:reject=all -m "$B" -p "$P" --temp 0 -n 2 \
    >/dev/null 2>"$TMP/e"
if grep -q "CPU engine kernels on the checkpoint's weights" "$TMP/e"; then
    pass qwen35_layers_on_the_checkpoints_weights
else
    fail qwen35_layers_on_the_checkpoints_weights "$(head -c 600 "$TMP/e")"
fi

# --dump-layers: every layer on the CPU engine's kernels can be reported
"$BIN" run $T --backend ane --ane-device fake:reject=all -m "$B" -p "$P" --temp 0 -n 4 \
    --dump-layers "$TMP/dump" >/dev/null 2>"$TMP/e"
if [ -s "$TMP/dump/layer_02.npy" ]; then
    pass dump_layers_with_every_layer_on_cpu_kernels
else
    fail dump_layers_with_every_layer_on_cpu_kernels "$(tail -2 "$TMP/e")"
fi
