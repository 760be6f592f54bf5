#!/bin/sh
# `nectar compile --palettize` ($NECTAR_BIN) end to end: the demo model at 8
# bits gives HF's greedy text (models/demo/reference.json, independent of
# nectar) for 32 tokens through the interpreter (--backend mil) and the fake
# ANE device, the same text as the cpu backend; the bundle holds uint8
# indices and per-16-row fp16 tables and passes `mil check --target ane`;
# `mil info` reports the bytes saved; an encoder bundle palettizes too, and
# `nectar parity` passes it at 8 and 6 bits and refuses it at 4; usage
# errors are one line, exit 2, and leave no bundle; Qwen3.5 bundles
# palettize too (value-head padding included).
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 2"
M=models/demo
REF=$M/reference.json

if "$BIN" compile -m $M -o "$TMP/p8" --palettize 8 --ctx 128 --buckets 32 $T >"$TMP/out" 2>&1 &&
    grep -q "palettized 36 tensors .* to 8 bits, groups of 16 rows" "$TMP/out" &&
    grep -q "palettize settings (in manifest.json): 8 bits (uint8 indices, fp16 tables), tables per 16 output channels, k-means++ seed [0-9]*, at most 1000 Lloyd steps" "$TMP/out" &&
    [ "$(jq -c '.palettize | [.bits, .granularity, .group_size, .kmeans.init]' "$TMP/p8/manifest.json")" = '[8,"per_grouped_channel",16,"k-means++"]' ]; then
    pass compile_palettize_8_writes_bundle
else
    fail compile_palettize_8_writes_bundle "$(cat "$TMP/out")"
fi

# what coremltools writes: typed uint8 indices with the weight's shape and a
# [O/16, 1, 1, 1, 256, 1] fp16 table (the demo's q_proj is [256, 256, 1, 1])
L0="$TMP/p8/layer_00/model.mil"
if grep -q 'tensor<uint8, \[256, 256, 1, 1\]> q_proj_weight_indices' "$L0" &&
    grep -q 'tensor<fp16, \[16, 1, 1, 1, 256, 1\]> q_proj_weight_lut' "$L0" &&
    grep -q 'q_proj_weight = constexpr_lut_to_dense(indices = q_proj_weight_indices, lut = q_proj_weight_lut)' "$L0"; then
    pass palettized_program_uses_constexpr_lut_to_dense
else
    fail palettized_program_uses_constexpr_lut_to_dense "$(grep -m2 q_proj_weight "$L0")"
fi

if "$BIN" mil check --target ane "$TMP/p8" >"$TMP/out" 2>&1; then
    pass palettized_bundle_passes_mil_check_ane
else
    fail palettized_bundle_passes_mil_check_ane "$(grep error "$TMP/out" | head -3)"
fi

# 7 projections of 256x256 .. 688x256 in fp16 vs uint8 indices + tables
if "$BIN" mil info "$L0" >"$TMP/info" 2>&1 &&
    grep -q 'palettized weights (constexpr_lut_to_dense, distinct): 7' "$TMP/info" &&
    grep -q 'dense  *1449984 bytes' "$TMP/info" && grep -q 'saved  *[0-9]* bytes (4[0-9]\.[0-9]% of dense)' "$TMP/info" &&
    grep -q "^bundle .*p8 (manifest.json): 8 bits (uint8 indices" "$TMP/info"; then
    pass mil_info_reports_palettized_bytes_saved
else
    fail mil_info_reports_palettized_bytes_saved "$(tail -4 "$TMP/info")"
fi

# greedy text at 8 bits: HF's (first 32 tokens of reference.json) and the cpu's
PROMPT=$(jq -r '.prompts[0].text' $REF)
HF=$(jq -r '.prompts[0].greedy_text' $REF)
"$BIN" run $T -m $M -p "$PROMPT" -n 32 --temp 0 >"$TMP/cpu" 2>/dev/null
for be in "mil" "ane --ane-device fake"; do
    name=$(echo "$be" | cut -d' ' -f1)
    # shellcheck disable=SC2086
    "$BIN" run $T --backend $be -m "$TMP/p8" -p "$PROMPT" -n 32 --temp 0 >"$TMP/$name" 2>"$TMP/err"
    got=$(cat "$TMP/$name")
    case "$HF" in
    "$got"*) hf_prefix=1 ;;
    *) hf_prefix=0 ;;
    esac
    if [ -s "$TMP/$name" ] && [ $hf_prefix = 1 ] && cmp -s "$TMP/$name" "$TMP/cpu"; then
        pass "palettized_8bit_greedy_32_tokens_equal_hf_and_cpu_$name"
    else
        fail "palettized_8bit_greedy_32_tokens_equal_hf_and_cpu_$name" "$(cat "$TMP/$name" "$TMP/err")"
    fi
done

# encoders: ModernBERT's projections at 6 bits, per output channel
if "$BIN" compile -m tests/fixtures/modernbert/mb_mlm -o "$TMP/enc" --buckets 32 --batches 1 \
    --palettize 6 --per-channel $T >"$TMP/out" 2>&1 &&
    grep -q "to 6 bits, groups of 1 rows" "$TMP/out" &&
    grep -q 'tensor<uint6, ' "$TMP/enc/encoder/model.mil" &&
    "$BIN" mil check --target ane "$TMP/enc" >"$TMP/chk" 2>&1; then
    pass encoder_palettize_6_per_channel_passes_mil_check_ane
else
    fail encoder_palettize_6_per_channel_passes_mil_check_ane "$(cat "$TMP/out"; grep error "$TMP/chk" | head -3)"
fi

# the parity gate (CPU engine vs the bundle in the fp16 interpreter) decides:
# 8 bits passes on the masked-LM encoder (50 positions), 6 bits on the
# classifier; 4 bits fails it (probability drift 0.11 > 0.02, exit 1)
F=tests/fixtures/modernbert
gate() { # bits model inputs.. -> exit status of parity, output in $TMP/gate
    b=$1
    m=$2
    shift 2
    "$BIN" compile -m $F/$m -o "$TMP/g$b$m" --buckets 32,64 --batches 1,3 --palettize $b $T >/dev/null 2>&1 &&
        "$BIN" parity -m $F/$m --candidate "$TMP/g$b$m" "$@" $T >"$TMP/gate" 2>&1
}
if gate 8 mb_mlm --inputs $F/mb_mlm/ref/input_ids.npy --mask $F/mb_mlm/ref/attention_mask.npy &&
    grep -q "parity gate: PASS" "$TMP/gate" && grep -q "argmax agreement   50/50" "$TMP/gate"; then
    pass parity_gate_passes_palettized_8bit_mlm_encoder
else
    fail parity_gate_passes_palettized_8bit_mlm_encoder "$(head -4 "$TMP/gate")"
fi
if gate 6 mm_cls --inputs $F/mm_cls/ref/texts.txt && grep -q "parity gate: PASS (3 inputs" "$TMP/gate"; then
    pass parity_gate_passes_palettized_6bit_classifier
else
    fail parity_gate_passes_palettized_6bit_classifier "$(head -4 "$TMP/gate")"
fi
gate 4 mm_cls --inputs $F/mm_cls/ref/texts.txt
rc=$?
if [ $rc = 1 ] && grep -q "parity gate: FAIL" "$TMP/gate" && grep -q "failed: probability drift" "$TMP/gate"; then
    pass parity_gate_refuses_palettized_4bit_classifier
else
    fail parity_gate_refuses_palettized_4bit_classifier "rc $rc: $(head -4 "$TMP/gate")"
fi

# a manifest whose palettize settings are malformed: one line naming the field
cp -r "$TMP/p8" "$TMP/badman"
jq '.palettize.bits = 5' "$TMP/p8/manifest.json" >"$TMP/badman/manifest.json"
"$BIN" run $T --backend mil -m "$TMP/badman" -p hi -n 1 >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q "manifest.json: palettize.bits 5 is not 1, 2, 4, 6 or 8" "$TMP/err"; then
    pass run_refuses_malformed_palettize_settings
else
    fail run_refuses_malformed_palettize_settings "rc $rc: $(cat "$TMP/err")"
fi

# usage errors: one line, exit 2, nothing written
for args in "--palettize 5" "--group-size 8" "--palettize 4 --per-channel --group-size 4"; do
    # shellcheck disable=SC2086
    "$BIN" compile -m $M -o "$TMP/bad" $args >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && [ ! -e "$TMP/bad" ]; then
        pass "compile_usage_error_$(echo "$args" | tr ' -' '__')"
    else
        fail "compile_usage_error_$(echo "$args" | tr ' -' '__')" "rc $rc: $(cat "$TMP/err")"
    fi
done

# Qwen3.5: both fixtures at 8, 6 and 4 bits (groups of 16) pass `mil check
# --target ane` with the value-head projections palettized; per output channel, 8
# bits holds every row of these 40-128 wide tensors exactly (<= 256
# distinct values), so `--backend mil` must give HF's greedy text
# (run_<i>.expected, tools/make_qwen35_fixtures.py) and the cpu's for 32
# tokens: the indices, tables and padding reach the interpreter intact.
# (Groups of 16 at 8 bits leave the CPU's path on near-ties of these random
# models: tests/lower/test_palettize_qwen35.c measures top-1 and KL.)
for name in tiny_text_untied tiny_vl_tied; do
    Q=tests/fixtures/qwen35/$name
    if "$BIN" compile -m $Q -o "$TMP/q8$name" --palettize 8 --ctx 256 --buckets 32,64 $T >"$TMP/out" 2>&1 &&
        grep -q "to 8 bits, groups of 16 rows" "$TMP/out" &&
        grep -q 'in_proj_qkv_weight = constexpr_lut_to_dense' "$TMP/q8$name/layer_00/model.mil" &&
        grep -q 'out_proj_weight = constexpr_lut_to_dense' "$TMP/q8$name/layer_00/model.mil" &&
        "$BIN" mil check --target ane "$TMP/q8$name" >"$TMP/chk" 2>&1 &&
        grep -q "^4 files checked: 0 with errors" "$TMP/chk"; then
        pass "qwen35_palettize_8_passes_mil_check_ane_$name"
    else
        fail "qwen35_palettize_8_passes_mil_check_ane_$name" "$(cat "$TMP/out"; grep -m3 error "$TMP/chk")"
    fi
    for b in 6 4; do
        if "$BIN" compile -m $Q -o "$TMP/q$b$name" --palettize $b --ctx 256 --buckets 32,64 $T >"$TMP/out" 2>&1 &&
            "$BIN" mil check --target ane "$TMP/q$b$name" >"$TMP/chk" 2>&1 &&
            grep -q "^4 files checked: 0 with errors" "$TMP/chk" && grep -q "tensor<uint$b, " "$TMP/q$b$name/layer_00/model.mil"; then
            pass "qwen35_palettize_${b}_passes_mil_check_ane_$name"
        else
            fail "qwen35_palettize_${b}_passes_mil_check_ane_$name" "$(cat "$TMP/out"; grep -m3 error "$TMP/chk")"
        fi
    done
    "$BIN" compile -m $Q -o "$TMP/qc$name" --palettize 8 --per-channel --ctx 256 --buckets 32,64 $T >/dev/null 2>&1
    for p in "$Q"/run_*.prompt; do
        r=$(basename "${p%.prompt}")
        "$BIN" run $T --backend mil -m "$TMP/qc$name" -f "$p" --temp 0 -n 32 >"$TMP/mil" 2>"$TMP/err"
        "$BIN" run $T -m $Q -f "$p" --temp 0 -n 32 >"$TMP/cpu" 2>/dev/null
        if [ -s "$TMP/mil" ] && cmp -s "$TMP/mil" "${p%.prompt}.expected" && cmp -s "$TMP/mil" "$TMP/cpu"; then
            pass "qwen35_palettized_8bit_greedy_32_tokens_equal_hf_and_cpu_${name}_$r"
        else
            fail "qwen35_palettized_8bit_greedy_32_tokens_equal_hf_and_cpu_${name}_$r" "got '$(cat "$TMP/mil")' ($(tail -1 "$TMP/err"))"
        fi
        # the same bundle on the ANE host runner (fake device): the same programs
        "$BIN" run $T --backend ane --ane-device fake -m "$TMP/qc$name" -f "$p" --temp 0 -n 32 >"$TMP/ane" 2>"$TMP/err"
        if [ -s "$TMP/ane" ] && cmp -s "$TMP/ane" "${p%.prompt}.expected"; then
            pass "qwen35_palettized_8bit_fake_ane_greedy_equal_hf_${name}_$r"
        else
            fail "qwen35_palettized_8bit_fake_ane_greedy_equal_hf_${name}_$r" "got '$(cat "$TMP/ane")' ($(tail -1 "$TMP/err"))"
        fi
    done
done
