#!/bin/sh
# The default bundles are clean by our own ANE rules (issue 25: `nectar
# compile` with no options gives 0 errors and 0 warnings under `mil check
# --target ane`) for Qwen3 (models/demo), Qwen3.5 (tiny_vl_tied,
# tiny_eos_mid) and the encoders (mb_base, mb_hd48: head_dim 16 and 48);
# the older forms, still reachable through their options, give the
# warnings the new defaults remove (so the check can fail); and the new
# Qwen3.5 forms give the cpu backend's greedy text through the interpreter
# and the fake device. docs/lowering.md, "Lowering forms".
. "$(dirname "$0")/../common/sh_test.sh"
P="In the beginning"

# name, model folder, the summary line mil check must print
while read -r name dir want; do
    if "$BIN" compile -m "$dir" -o "$TMP/$name" -t 1 >"$TMP/out" 2>&1 &&
        "$BIN" mil check --target ane --quiet "$TMP/$name" >"$TMP/chk" 2>&1 &&
        grep -q "; 0 errors, $want warnings$" "$TMP/chk"; then
        pass "default_bundle_${name}_has_${want}_ane_warnings"
    else
        fail "default_bundle_${name}_has_${want}_ane_warnings" "$(tail -2 "$TMP/out" "$TMP/chk")"
    fi
done <<EOF
demo models/demo 0
tiny_vl_tied tests/fixtures/qwen35/tiny_vl_tied 0
tiny_eos_mid tests/fixtures/qwen35/tiny_eos_mid 0
mb_base tests/fixtures/modernbert/mb_base 0
mb_hd48 tests/fixtures/modernbert/mb_hd48 0
mm_cls tests/fixtures/modernbert/mm_cls 0
EOF

# tiny_text_untied's full-attention head_dim of 24 is the KV cache's row
# count, which the host lays out: its scores matmul keeps the one
# ane-matmul-inner warning per bucket (real Qwen3.5 has head_dim 256)
"$BIN" compile -m tests/fixtures/qwen35/tiny_text_untied -o "$TMP/q35u" -t 1 >/dev/null 2>&1
"$BIN" mil check --target ane "$TMP/q35u" >"$TMP/chk" 2>&1
if grep -q "; 0 errors, 3 warnings$" "$TMP/chk" &&
    [ "$(grep -c "matmul 'scores': inner dimension 24 .*ane-matmul-inner" "$TMP/chk")" -eq 3 ]; then
    pass default_bundle_tiny_text_untied_warns_only_for_head_dim_24
else
    fail default_bundle_tiny_text_untied_warns_only_for_head_dim_24 "$(tail -3 "$TMP/chk")"
fi

# the new defaults are recorded, and the old forms bring their warnings back
if grep -q '"exp": "sigmoid"' "$TMP/tiny_eos_mid/manifest.json" &&
    grep -q '"matmul_pad": "32"' "$TMP/tiny_eos_mid/manifest.json" &&
    ! grep -q "= exp(" "$TMP"/tiny_eos_mid/*/model.mil &&
    grep -q '"heads_out": "sum"' "$TMP/mb_base/manifest.json" &&
    tr -d ' \n' <"$TMP/mb_base/manifest.json" | grep -q '"buckets":\[32,64,128\]'; then
    pass default_forms_are_in_the_manifests
else
    fail default_forms_are_in_the_manifests "$(grep -o '"forms": {[^}]*}' "$TMP"/*/manifest.json)"
fi
"$BIN" compile -m tests/fixtures/qwen35/tiny_eos_mid -o "$TMP/q35old" -t 1 --exp op --matmul-pad none \
    >/dev/null 2>&1
"$BIN" mil check --target ane "$TMP/q35old" >"$TMP/chk" 2>&1
if [ "$(grep -c "\[ane-exp\]" "$TMP/chk")" -gt 0 ] &&
    [ "$(grep -c "\[ane-matmul-inner\]" "$TMP/chk")" -gt 0 ]; then
    pass qwen35_old_forms_bring_exp_and_matmul_inner_warnings_back
else
    fail qwen35_old_forms_bring_exp_and_matmul_inner_warnings_back "$(tail -1 "$TMP/chk")"
fi
"$BIN" compile -m tests/fixtures/modernbert/mb_base -o "$TMP/mbold" -t 1 --heads-out concat \
    --matmul-pad none --buckets 64,96,128 >/dev/null 2>&1
"$BIN" mil check --target ane --quiet "$TMP/mbold" >"$TMP/chk" 2>&1
if grep -q "; 0 errors, 152 warnings$" "$TMP/chk"; then
    pass encoder_old_forms_bring_their_152_warnings_back
else
    fail encoder_old_forms_bring_their_152_warnings_back "$(tail -1 "$TMP/chk")"
fi

# the Qwen3.5 forms, new and old: the cpu backend's 64 greedy tokens
M=tests/fixtures/qwen35/tiny_eos_mid
"$BIN" run -t 1 -m $M -p "$P" --temp 0 -n 64 >"$TMP/cpu" 2>/dev/null
for b in tiny_eos_mid q35old; do
    for be in mil "ane --ane-device fake"; do
        L="qwen35_${b}_$(echo $be | cut -d' ' -f1)_equals_cpu"
        if "$BIN" run -t 1 --backend $be -m "$TMP/$b" -p "$P" --temp 0 -n 64 >"$TMP/o" 2>"$TMP/e" &&
            [ -s "$TMP/cpu" ] && cmp -s "$TMP/o" "$TMP/cpu"; then
            pass "$L"
        else
            fail "$L" "$(tail -2 "$TMP/e")"
        fi
    done
done
