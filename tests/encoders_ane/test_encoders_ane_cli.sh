#!/bin/sh
# Encoders through the command line: nectar compile on encoder folders, the
# bundle under `nectar mil check --target ane`, `nectar parity` (pass and
# refusals), and embed / fill-mask / classify with --backend mil against
# HF's own answers in tests/fixtures/modernbert/*/ref, and with --backend ane
# on the fake device against --backend mil.
BIN=${NECTAR_BIN:-build/nectar}
F=tests/fixtures/modernbert
T=$(mktemp -d /tmp/nectar_enc_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; }

if "$BIN" compile -m $F/mb_mlm -o "$T/mlm.ane" --buckets 32,64 --batches 1,3 >"$T/out" 2>&1 &&
    grep -q "4 functions" "$T/out" && [ -f "$T/mlm.ane/manifest.json" ]; then
    ok compile_encoder_folder
else bad compile_encoder_folder "$(cat "$T/out")"; fi

if "$BIN" mil check --target ane "$T/mlm.ane" >"$T/out" 2>&1; then ok bundle_passes_ane_check
else bad bundle_passes_ane_check "$(grep error "$T/out" | head -3)"; fi

if "$BIN" parity -m $F/mb_mlm --candidate "$T/mlm.ane" --inputs $F/mb_mlm/ref/input_ids.npy \
    --mask $F/mb_mlm/ref/attention_mask.npy >"$T/out" 2>&1 && grep -q "parity gate: PASS" "$T/out" &&
    grep -q "argmax agreement   50/50" "$T/out"; then ok parity_passes_on_npy_inputs
else bad parity_passes_on_npy_inputs "$(head -5 "$T/out")"; fi

"$BIN" compile -m $F/mm_cls -o "$T/cls.ane" --buckets 32 >/dev/null 2>&1
if "$BIN" parity -m $F/mm_cls --candidate "$T/cls.ane" --inputs $F/mm_cls/ref/texts.txt >"$T/out" 2>&1 &&
    grep -q "parity gate: PASS (3 inputs" "$T/out"; then ok parity_passes_on_text_inputs
else bad parity_passes_on_text_inputs "$(head -5 "$T/out")"; fi

# a bundle of another model is refused, not compared
"$BIN" parity -m $F/mm_cls --candidate "$T/mlm.ane" --inputs $F/mm_cls/ref/texts.txt >"$T/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q "was not compiled from a model shaped like" "$T/out"; then ok parity_refuses_other_model
else bad parity_refuses_other_model "rc=$rc $(cat "$T/out")"; fi

"$BIN" parity -m $F/mm_cls --inputs x >"$T/out" 2>&1
if [ $? = 2 ]; then ok parity_usage_errors; else bad parity_usage_errors "$(cat "$T/out")"; fi

# inputs longer than the largest bucket: one line, exit 1
"$BIN" compile -m $F/mb_mlm -o "$T/short.ane" --buckets 32 --batches 1 >/dev/null 2>&1
python_free_line=$(printf 'word %.0s' $(seq 1 40))
echo "$python_free_line" >"$T/long.txt"
"$BIN" parity -m $F/mb_mlm --candidate "$T/short.ane" --inputs "$T/long.txt" >"$T/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q "exceed the largest compiled bucket" "$T/out" && [ "$(wc -l <"$T/out")" = 1 ]; then
    ok parity_reports_too_long_input
else bad parity_reports_too_long_input "rc=$rc $(cat "$T/out")"; fi

# fill-mask through the interpreter: HF's top token (ref/fill_mask.json ids[0] = 139)
"$BIN" fill-mask --backend mil -m "$T/mlm.ane" -p "Paris is the [MASK] of France." >"$T/out" 2>/dev/null
if grep -q "1\..*(id 139)" "$T/out"; then ok fill_mask_backend_mil_matches_hf
else bad fill_mask_backend_mil_matches_hf "$(cat "$T/out")"; fi

# classify through the interpreter: HF's labels (argmax of ref/classify.json probs)
"$BIN" classify --backend mil -m "$T/cls.ane" -f $F/mm_cls/ref/texts.txt >"$T/out" 2>/dev/null
tops=$(awk 'prev ~ /^[^ ]/ {print $1} {prev=$0}' "$T/out" | tr '\n' ' ')
if [ "$tops" = "positive positive positive " ] && grep -q "positive  *0\.71" "$T/out"; then ok classify_backend_mil_matches_hf
else bad classify_backend_mil_matches_hf "tops: $tops"; fi

"$BIN" compile -m $F/mb_base -o "$T/base.ane" --buckets 32 --batches 1 >/dev/null 2>&1
if "$BIN" embed --backend mil -m "$T/base.ane" -f $F/mb_base/ref/texts.txt >"$T/out" 2>/dev/null &&
    grep -q '"dim": 64' "$T/out"; then ok embed_backend_mil_runs
else bad embed_backend_mil_runs "$(head -3 "$T/out")"; fi

"$BIN" embed --backend gpu -m "$T/base.ane" -p hi >"$T/out" 2>&1
if [ $? != 0 ] && grep -q "backend: 'gpu' is not one of cpu|mil|ane" "$T/out"; then ok backend_name_checked
else bad backend_name_checked "$(cat "$T/out")"; fi

# --backend ane --ane-device fake: the whole ANE request path (the ane_host
# runner on the fake device) answers exactly as the interpreter
same_as_mil() { # NAME COMMAND ARGS...
    name=$1
    shift
    "$BIN" "$@" --backend mil >"$T/mil" 2>/dev/null
    "$BIN" "$@" --backend ane --ane-device fake >"$T/ane" 2>"$T/err"
    if [ -s "$T/mil" ] && cmp -s "$T/mil" "$T/ane"; then ok "$name"
    else bad "$name" "$(diff "$T/mil" "$T/ane" | head -3) $(head -2 "$T/err")"; fi
}
same_as_mil fill_mask_ane_fake_equals_mil fill-mask -m "$T/mlm.ane" -p "Paris is the [MASK] of France."
same_as_mil classify_ane_fake_equals_mil classify -m "$T/cls.ane" -f $F/mm_cls/ref/texts.txt
same_as_mil embed_ane_fake_equals_mil embed -m "$T/base.ane" -f $F/mb_base/ref/texts.txt

# the real device where this build has none: one line, exit 2
if [ "$(uname -s)" != Darwin ]; then
    "$BIN" embed --backend ane --ane-device real -m "$T/base.ane" -p hi >"$T/out" 2>&1
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l <"$T/out")" = 1 ] && grep -q "macOS" "$T/out"; then
        ok encoder_ane_real_off_macos_is_one_line_exit_2
    else bad encoder_ane_real_off_macos_is_one_line_exit_2 "rc=$rc $(cat "$T/out")"; fi
fi

# an existing non-bundle output is never replaced
echo keep >"$T/notabundle"
"$BIN" compile -m $F/mb_mlm -o "$T/notabundle" >"$T/out" 2>&1
if [ $? = 1 ] && [ "$(cat "$T/notabundle")" = keep ]; then ok compile_keeps_foreign_output
else bad compile_keeps_foreign_output "$(cat "$T/out")"; fi

"$BIN" compile -m $F/mb_mlm -o "$T/x.ane" --buckets 40 >"$T/out" 2>&1
if [ $? = 1 ] && grep -q "multiple of 32" "$T/out" && [ ! -e "$T/x.ane" ]; then ok compile_rejects_bad_bucket
else bad compile_rejects_bad_bucket "$(cat "$T/out")"; fi
