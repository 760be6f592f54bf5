#!/bin/sh
# `nectar compile` on the tiny Qwen3.5 checkpoints (both layouts: the
# text-only CausalLM folder and the hub ConditionalGeneration folder), then
# every emitted program through `nectar mil check --target ane`, no int32
# gather index, and `nectar run --backend mil` (the qwen35-mil engine: the
# MIL interpreter in fp16) giving HF transformers' greedy text for 32 tokens
# (tests/fixtures/qwen35/*/run_<i>.expected, written by
# tools/make_qwen35_fixtures.py) and the cpu backend's; a two-turn chat
# (prefix reuse: truncation + replay of the recurrent state) equal to the
# cpu backend's; one-line errors for what a Qwen3.5 bundle cannot do. The
# linear layers' prefill_sS is checked in both forms: the chunked delta
# rule (the default) and, compiled with --q35-prefill unrolled, the
# recurrent form unrolled over the chunk (that bundle also takes the gather
# KV update, whose indices are checked to be uint16).
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"

for name in tiny_text_untied tiny_vl_tied; do
    M=tests/fixtures/qwen35/$name
    B="$TMP/$name"
    # 3 layers (2 linear + 1 full): step + mlp, step + mlp, 4 kernels, head;
    # the 128 bucket runs 8 sub-chunks of the chunked prefill in sequence
    if "$BIN" compile -m "$M" -o "$B" --ctx 256 --buckets 32,64,128 $T >"$TMP/out" 2>"$TMP/err" &&
        grep -q "4 programs" "$TMP/err" && grep -q "9 kernels per token" "$TMP/err" &&
        [ -f "$B/manifest.json" ] && [ -f "$B/head_00/model.mil" ] &&
        grep -q "func step_s32" "$B/layer_00/model.mil" &&
        grep -q "func mlp_s64" "$B/layer_00/model.mil" &&
        grep -q "func prefill_s128" "$B/layer_00/model.mil" &&
        grep -q "func qkv_s32" "$B/layer_01/model.mil" &&
        grep -q "ut_rhs = " "$B/layer_00/model.mil" &&
        "$BIN" compile -m "$M" -o "$B.unrolled" --ctx 256 --buckets 32,64 --q35-prefill unrolled --kv-update gather \
            $T >"$TMP/out" 2>"$TMP/err" &&
        grep -q "state_new_31 = " "$B.unrolled/layer_00/model.mil" &&
        ! grep -q "ut_rhs = " "$B.unrolled/layer_00/model.mil"; then
        pass "compile_qwen35_writes_bundle_$name"
    else
        fail "compile_qwen35_writes_bundle_$name" "$(cat "$TMP/out" "$TMP/err")"
    fi

    if "$BIN" mil check --target ane "$B" >"$TMP/out" 2>&1 && grep -q "^4 files checked: 0 with errors" "$TMP/out" &&
        "$BIN" mil check --target ane "$B.unrolled" >"$TMP/out" 2>&1 &&
        grep -q "^4 files checked: 0 with errors" "$TMP/out"; then
        pass "compile_qwen35_passes_mil_check_ane_$name"
    else
        fail "compile_qwen35_passes_mil_check_ane_$name" "$(grep -m3 error "$TMP/out")"
    fi

    awk -f tests/lower/gather_indices.awk "$B.unrolled"/*/model.mil >"$TMP/gq" 2>&1
    if [ -s "$TMP/gq" ] && ! grep -qv " uint16$" "$TMP/gq"; then
        pass "compile_qwen35_no_int32_gather_indices_$name"
    else
        fail "compile_qwen35_no_int32_gather_indices_$name" "$(head -3 "$TMP/gq")"
    fi

    for p in "$M"/run_*.prompt; do
        e=${p%.prompt}.expected
        r=$(basename "${p%.prompt}")
        "$BIN" run $T -m "$M" -f "$p" --temp 0 -n 32 >"$TMP/cpu" 2>/dev/null
        for form in chunked unrolled; do
            bb=$B && sfx=
            [ $form = unrolled ] && bb=$B.unrolled && sfx=_unrolled
            if "$BIN" run $T --backend mil -m "$bb" -f "$p" --temp 0 -n 32 >"$TMP/mil" 2>"$TMP/err" &&
                [ -s "$TMP/mil" ] && cmp -s "$TMP/mil" "$e"; then
                pass "run_qwen35_mil_greedy_matches_hf_${name}_$r$sfx"
            else
                fail "run_qwen35_mil_greedy_matches_hf_${name}_$r$sfx" "got '$(cat "$TMP/mil")' ($(tail -1 "$TMP/err"))"
            fi
            if [ -s "$TMP/cpu" ] && cmp -s "$TMP/mil" "$TMP/cpu"; then
                pass "run_qwen35_mil_greedy_equals_cpu_${name}_$r$sfx"
            else
                fail "run_qwen35_mil_greedy_equals_cpu_${name}_$r$sfx" "mil '$(cat "$TMP/mil")' cpu '$(cat "$TMP/cpu")'"
            fi
        done
    done
done

# a second chat turn reuses the first turn's prefix: the engine truncates
# (the recurrent state is reset) and replays the kept tokens
M=tests/fixtures/qwen35/tiny_vl_tied
printf 'hello there\nand again\n' |
    "$BIN" chat $T --backend mil -m "$TMP/tiny_vl_tied" --temp 0 -n 12 --no-think >"$TMP/mil" 2>"$TMP/err"
printf 'hello there\nand again\n' | "$BIN" chat $T -m "$M" --temp 0 -n 12 --no-think >"$TMP/cpu" 2>/dev/null
printf 'hello there\nand again\n' |
    "$BIN" chat $T --backend mil -m "$TMP/tiny_vl_tied.unrolled" --temp 0 -n 12 --no-think >"$TMP/milu" 2>/dev/null
if grep -q "cached" "$TMP/err" && [ -s "$TMP/cpu" ] && cmp -s "$TMP/mil" "$TMP/cpu" &&
    cmp -s "$TMP/milu" "$TMP/cpu"; then
    pass chat_qwen35_mil_two_turns_equal_cpu
else
    fail chat_qwen35_mil_two_turns_equal_cpu "mil '$(cat "$TMP/mil")' unrolled '$(cat "$TMP/milu")' cpu '$(cat "$TMP/cpu")' $(tail -2 "$TMP/err")"
fi

# the host's CPU head is Qwen3's (plain-weight norm): refused for Qwen3.5, no bundle left
if ! "$BIN" compile -m "$M" -o "$TMP/cpuhead" --lm-head cpu $T >/dev/null 2>"$TMP/err" &&
    [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "Qwen3.5" "$TMP/err" && [ ! -e "$TMP/cpuhead" ]; then
    pass compile_qwen35_lm_head_cpu_is_one_line
else
    fail compile_qwen35_lm_head_cpu_is_one_line "$(cat "$TMP/err")"
fi
