#!/bin/sh
# A device that says no (--ane-device fake:reject=RULE,...: ane_fake_rules.h)
# still gives tokens: a program the fake device refuses at compile time goes
# down the ladder (each of its functions as a program of its own, then the
# CPU: the MIL interpreter on the same program, ane_runner.h), and
# `nectar run --backend ane` prints the cpu backend's greedy text (64 tokens
# on models/demo and on a Qwen3.5 fixture) for each rule alone and all of
# them together, and says where each kernel ran and in which lowering forms. The fake's other
# behaviours (status lists shuffled or without names, padded strides) give
# the same text. The reference text is the cpu engine's (fp32, from the
# checkpoint), an engine that shares no code with the bundle path.
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"
RULES="gather multi-function mixed-shapes multi-output elementwise-only broadcast-matmul wide-conv all"

# model folder, bundle options, tokens, label
check_model() {
    M=$1 OPTS=$2 N=$3 L=$4
    B="$TMP/$L.ane"
    if ! "$BIN" compile -m "$M" -o "$B" $OPTS $T >"$TMP/out" 2>"$TMP/err"; then
        fail "compile_$L" "$(cat "$TMP/err")"
        return
    fi
    "$BIN" run $T -m "$M" -p "In the beginning" --temp 0 -n "$N" >"$TMP/$L.cpu" 2>/dev/null
    for r in $RULES; do
        if "$BIN" run $T --backend ane --ane-device "fake:reject=$r" -m "$B" -p "In the beginning" \
            --temp 0 -n "$N" >"$TMP/o" 2>"$TMP/e" && cmp -s "$TMP/o" "$TMP/$L.cpu" &&
            grep -q "kernels on the ANE.*; forms: [1-4] kernels per layer, program split " "$TMP/e"; then
            pass "reject_${r}_gives_cpu_text_$L"
        else
            fail "reject_${r}_gives_cpu_text_$L" "$(head -c 600 "$TMP/e")"
        fi
    done
    # with every rule, every layer program is refused and says why; the
    # functions that break no rule alone (mlp) go back on the device, those
    # refused for their several outputs as a program per output, and those
    # refused for a construct another form avoids re-lowered (models/demo:
    # every kernel; a Qwen3.5 fixture's mixers stay on the CPU: counted per
    # function with the interpreter, NECTAR_ANE_CPU=interp or --ane-cpu interp)
    NECTAR_ANE_CPU=interp NECTAR_ANE_DEVICE=fake:reject=all "$BIN" run $T --backend ane -m "$B" \
        -p "In the beginning" --temp 0 -n "$N" >"$TMP/o" 2>"$TMP/e"
    NECTAR_ANE_DEVICE=fake:reject=all "$BIN" run $T --backend ane --ane-cpu interp -m "$B" \
        -p "In the beginning" --temp 0 -n 4 >/dev/null 2>"$TMP/e2"
    if cmp -s "$TMP/o" "$TMP/$L.cpu" &&
        grep -q "layers 0-[0-9]*: [1-9][0-9]*/[0-9]* kernels on the ANE ([0-9]* as programs of their own) ([0-9]* as a program per output)\( ([0-9]* re-lowered: [a-z0-9 ,+]*)\)\?\(, [0-9]* on the CPU\)\? (layer_00/model.mil refused: compileModel: ANECCompile() FAILED <- " "$TMP/e" &&
        grep -q " (layer_00/model.mil refused: " "$TMP/e2" && ! grep -q "CPU engine kernels" "$TMP/e" "$TMP/e2"; then
        pass "reject_all_reports_placement_$L"
    else
        fail "reject_all_reports_placement_$L" "$(cat "$TMP/e" "$TMP/e2")"
    fi
    # by default a layer with a function refused at every rung runs whole
    # on the CPU engine's kernels (the interpreter runs nothing): every
    # layer, with a ladder that stops before the relower rung
    echo '{"ladder_order": ["program", "function", "outputs", "cpu"]}' >"$TMP/norelower.json"
    NECTAR_ANE_PROFILE="$TMP/norelower.json" NECTAR_ANE_DEVICE=fake:reject=all "$BIN" run $T \
        --backend ane -m "$B" -p "In the beginning" --temp 0 -n "$N" >"$TMP/o" 2>"$TMP/e"
    if cmp -s "$TMP/o" "$TMP/$L.cpu" &&
        grep -q "layers 0-[0-9]*: CPU engine kernels (layer_00/model.mil refused: compileModel: ANECCompile() FAILED <- " "$TMP/e" &&
        ! grep -q " on the CPU (" "$TMP/e"; then
        pass "reject_all_without_relower_runs_layers_on_cpu_engine_kernels_$L"
    else
        fail "reject_all_without_relower_runs_layers_on_cpu_engine_kernels_$L" "$(cat "$TMP/e")"
    fi
    # a program refused for holding several functions is compiled function
    # by function: every kernel back on the device
    "$BIN" run $T --backend ane --ane-device fake:reject=multi-function -m "$B" \
        -p "In the beginning" --temp 0 -n "$N" >"$TMP/o" 2>"$TMP/e"
    if cmp -s "$TMP/o" "$TMP/$L.cpu" &&
        grep -q "layers 0-[0-9]*: \([0-9]*\)/\1 kernels on the ANE (\1 as programs of their own) (layer_00/model.mil refused: " "$TMP/e" &&
        [ -f "$B/ladder/layer_00_mlp_s32/model.mil" ]; then
        pass "ladder_compiles_refused_program_by_function_$L"
    else
        fail "ladder_compiles_refused_program_by_function_$L" "$(head -c 600 "$TMP/e")"
    fi
    # these must bind on the device: every kernel on the ANE (the fallback
    # would give the same text and hide a binding that gave up)
    for b in shuffle-status nameless-status padded-strides shuffle-status:padded-strides; do
        if "$BIN" run $T --backend ane --ane-device "fake:$b" -m "$B" -p "In the beginning" \
            --temp 0 -n "$N" >"$TMP/o" 2>"$TMP/e" && cmp -s "$TMP/o" "$TMP/$L.cpu" &&
            grep -q "kernels on the ANE" "$TMP/e" && ! grep -q "on the CPU" "$TMP/e"; then
            pass "fake_${b}_binds_on_device_gives_cpu_text_$L"
        else
            fail "fake_${b}_binds_on_device_gives_cpu_text_$L" "$(head -c 600 "$TMP/e")"
        fi
    done
    # the CPU's kernels read the device's padded surfaces
    for b in padded-strides:reject=gather; do
        if "$BIN" run $T --backend ane --ane-device "fake:$b" -m "$B" -p "In the beginning" \
            --temp 0 -n "$N" >"$TMP/o" 2>"$TMP/e" && cmp -s "$TMP/o" "$TMP/$L.cpu"; then
            pass "fake_${b}_gives_cpu_text_$L"
        else
            fail "fake_${b}_gives_cpu_text_$L" "$(head -c 600 "$TMP/e")"
        fi
    done
}

check_model models/demo "" 64 demo
check_model tests/fixtures/qwen35/tiny_text_untied "--ctx 256 --buckets 32,64" 64 qwen35

# bad settings: one line naming them, exit 2, nothing generated
for bad in fake:reject=nope fake:wobble fakeish; do
    if ! "$BIN" run --backend ane --ane-device "$bad" -m "$TMP/demo.ane" -p x -n 2 >"$TMP/o" \
        2>"$TMP/e" && [ ! -s "$TMP/o" ] && [ "$(wc -l <"$TMP/e")" -le 2 ] &&
        grep -q "$(echo "$bad" | sed 's/.*[:=]//')" "$TMP/e"; then
        pass "bad_device_setting_is_one_line_$bad"
    else
        fail "bad_device_setting_is_one_line_$bad" "$(cat "$TMP/o" "$TMP/e")"
    fi
done
if "$BIN" run --backend ane --ane-device help -m "$TMP/demo.ane" -p x >"$TMP/o" 2>&1 &&
    grep -q "broadcast-matmul" "$TMP/o" && grep -q "padded-strides" "$TMP/o" &&
    "$BIN" ane --help >"$TMP/o" 2>&1 && grep -q "reject=RULE" "$TMP/o"; then
    pass ane_device_help_lists_rules
else
    fail ane_device_help_lists_rules "$(cat "$TMP/o")"
fi
