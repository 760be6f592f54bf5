#!/bin/sh
# The partitioned decision model from the command line: `nectar compile` of a
# decision folder writes a bundle with partition.json whose program passes
# `nectar mil check --target ane`; `nectar decide --backend mil` on it gives
# the PyTorch reference's probabilities within the fp16 gate (0.02; the
# same argmax per input) and reports the bytes crossing engines on stderr;
# --backend ane --ane-device fake gives the same within the gate; a bundle
# without the partition is refused in one line.
BIN=${NECTAR_BIN:-build/nectar}
FIX=tests/fixtures/decision
T=${NECTAR_BUILD:-build}/tmp/test_decide_bundle_cli.$$
if [ ! -x "$BIN" ]; then echo "SKIP decide_bundle_cli: $BIN not built"; exit 0; fi
rm -rf "$T"; mkdir -p "$T"

probs() {
    sed 's/.*"marker_probs": \[\([^]]*\)\], "calibrated": \[\([^]]*\)\], "action_probs": \[\([^]]*\)\].*/\1, \2, \3/' |
        tr ',' '\n' | tr -d ' '
}

for m in dm_multi dm_compact dm_k3; do
    B="$T/$m.ane"
    if "$BIN" compile -m $FIX/$m -o "$B" --buckets 64,96 --batches 1,3 >"$T/compile.out" 2>&1 &&
        [ -s "$B/partition.json" ] && grep -q '"head_layers"' "$B/partition.json" &&
        "$BIN" mil check "$B/encoder/model.mil" --target ane >"$T/check.out" 2>&1; then
        echo "PASS decide_bundle_${m}_compiles_and_checks"
    else echo "FAIL decide_bundle_${m}_compiles_and_checks: $(tail -2 "$T/compile.out" "$T/check.out")"; fi
    "$BIN" decide --backend mil -m "$B" -f $FIX/$m/ref/texts.txt -t 2 >"$T/out" 2>"$T/err"
    probs <"$T/out" >"$T/$m.txt"
    if [ -s "$T/$m.txt" ] && [ "$(wc -l <"$T/$m.txt")" -eq "$(wc -l <$FIX/$m/ref/decide.txt)" ] &&
        paste "$T/$m.txt" $FIX/$m/ref/decide.txt |
        awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 0.02) bad = 1} END {exit bad}'; then
        echo "PASS decide_mil_${m}_within_fp16_gate"
    else echo "FAIL decide_mil_${m}_within_fp16_gate"; paste "$T/$m.txt" $FIX/$m/ref/decide.txt | head -5; fi
    # the most likely action, as the CPU names it
    "$BIN" decide -m $FIX/$m -f $FIX/$m/ref/texts.txt -t 2 2>/dev/null |
        sed 's/.*"action": //' >"$T/cpu_actions"
    sed 's/.*"action": //' "$T/out" >"$T/mil_actions"
    if [ -s "$T/mil_actions" ] && cmp -s "$T/cpu_actions" "$T/mil_actions"; then
        echo "PASS decide_mil_${m}_same_actions"
    else echo "FAIL decide_mil_${m}_same_actions"; fi
    # three inputs, one call each of function (1, 64): fp16 embeddings in
    # 1 x 64 x D x 2 bytes a call, hidden out 3 x D x 64 x 2 bytes in all
    D=$(sed -n 's/.*"hidden_size": *\([0-9]*\).*/\1/p' $FIX/$m/config.json | head -1)
    N=$(sed -n 's/.*"num_hidden_layers": *\([0-9]*\).*/\1/p' $FIX/$m/config.json | head -1)
    H=$(sed -n 's/.*"head_layers": *\([0-9]*\).*/\1/p' $FIX/$m/decision.json | head -1)
    want=$((3 * D * 64 * 2))
    if grep -q "^decide: 3 region calls (last at B=1 L=64: $((64 * D * 2)) B of fp16 embeddings each); CPU->NE [0-9]* B (embeddings $((3 * 64 * D * 2)), masks [0-9]*, types [0-9]*), NE->CPU $want B (hidden); copies [0-9.]* ms, inside the end-to-end time$" "$T/err"; then
        echo "PASS decide_mil_${m}_reports_crossings"
    else echo "FAIL decide_mil_${m}_reports_crossings: $(cat "$T/err")"; fi
    # which parts ran where: stderr, partition.json and the manifest say it
    part="CPU: tokenizer, token embeddings, embedding LayerNorm; NE (MIL interpreter, fp16): $N encoder layers + final norm + type addition + $H head layers; CPU: marker selection, scorer, raw and calibrated probabilities, action head"
    if grep -qF "decide: partition: $part" "$T/err" &&
        grep -q '"partition": {' "$B/manifest.json" &&
        grep -q "\"encoder_layers\": $N," "$B/manifest.json" &&
        tr -d ' \n' <"$B/manifest.json" | grep -q "{\"batch\":1,\"seq\":96,\"embeddings_bytes\":$((96 * D * 2)),\"mask_bytes\":$((96 * 96 * 2)),\"types_bytes\":[0-9]*,\"hidden_bytes\":$((96 * D * 2))}" &&
        tr -d ' \n' <"$B/partition.json" | grep -q "{\"batch\":3,\"seq\":64,\"embeddings_bytes\":$((3 * 64 * D * 2)),"; then
        echo "PASS decide_mil_${m}_shows_the_partition"
    else echo "FAIL decide_mil_${m}_shows_the_partition: $(head -1 "$T/err")"; fi
done

# the fake ANE device (the interpreter behind the device interface, the
# request path of a real device) within the same gate
B="$T/dm_k3.ane"
"$BIN" decide --backend ane --ane-device fake -m "$B" -f $FIX/dm_k3/ref/texts.txt -t 2 2>"$T/err" |
    probs >"$T/fake.txt"
if [ -s "$T/fake.txt" ] && [ "$(wc -l <"$T/fake.txt")" -eq "$(wc -l <$FIX/dm_k3/ref/decide.txt)" ] &&
    paste "$T/fake.txt" $FIX/dm_k3/ref/decide.txt |
    awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 0.02) bad = 1} END {exit bad}' &&
    grep -q "^decide: 3 region calls" "$T/err" && grep -q "^decide: partition: .*; NE (fake ANE): " "$T/err"; then echo "PASS decide_ane_fake_within_fp16_gate"
else echo "FAIL decide_ane_fake_within_fp16_gate: $(cat "$T/err")"; fi
# --no-concat: the head layers' out projection per head, summed, as the
# encoder's: no concat left for mil check to flag, the same gate
"$BIN" compile -m $FIX/dm_k3 -o "$T/nc.ane" --buckets 64 --batches 1,3 --no-concat >/dev/null 2>&1
"$BIN" mil check "$T/nc.ane/encoder/model.mil" --target ane >"$T/check.out" 2>&1
"$BIN" decide --backend mil -m "$T/nc.ane" -f $FIX/dm_k3/ref/texts.txt -t 2 2>/dev/null | probs >"$T/nc.txt"
if [ -s "$T/nc.txt" ] && ! grep -q "ane-concat" "$T/check.out" && grep -q "hd01_attn_h2_wo" "$T/nc.ane/encoder/model.mil" &&
    paste "$T/nc.txt" $FIX/dm_k3/ref/decide.txt |
    awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 0.02) bad = 1} END {exit bad}'; then
    echo "PASS decide_no_concat_head_within_fp16_gate"
else echo "FAIL decide_no_concat_head_within_fp16_gate: $(grep -c ane-concat "$T/check.out") concat warnings"; fi
# nectar parity on the whole decision (the study's gate): the fp16 bundle
# passes with every input certified and a drift line per encoder and head
# layer; 4-bit palettized weights fail it on this fixture (exit 1)
"$BIN" parity -m $FIX/dm_k3 --candidate "$T/dm_k3.ane" --inputs $FIX/dm_k3/ref/texts.txt -t 2 >"$T/par" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^gate: PASS$" "$T/par" && grep -q "argmax agreement: markers 3/3, actions 3/3  \[pass\]" "$T/par" &&
    grep -q "3/3 inputs certified" "$T/par" && [ "$(grep -c '^    \(encoder\|head\) layer [0-9]*: ' "$T/par")" -eq 4 ]; then
    echo "PASS parity_decision_fp16_passes_the_gate"
else echo "FAIL parity_decision_fp16_passes_the_gate: rc $rc $(cat "$T/par")"; fi
"$BIN" compile -m $FIX/dm_k3 -o "$T/p4.ane" --buckets 64 --batches 1,3 --palettize 4 >/dev/null 2>&1
"$BIN" parity -m $FIX/dm_k3 --candidate "$T/p4.ane" --inputs $FIX/dm_k3/ref/texts.txt -t 2 >"$T/par4" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "^gate: FAIL$" "$T/par4" && grep -q "not certified" "$T/par4"; then
    echo "PASS parity_decision_4bit_fails_the_gate"
else echo "FAIL parity_decision_4bit_fails_the_gate: rc $rc $(cat "$T/par4")"; fi
# a real device off macOS: one line, exit 1, nothing on stdout
if [ "$(uname)" != Darwin ]; then
    "$BIN" decide --backend ane --ane-device real -m "$B" -p x >"$T/out" 2>"$T/err"; rc=$?
    if [ $rc -eq 1 ] && [ ! -s "$T/out" ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
        grep -q "macOS" "$T/err"; then echo "PASS decide_ane_real_refused_off_macos"
    else echo "FAIL decide_ane_real_refused_off_macos: rc $rc, $(cat "$T/err")"; fi
fi

# a plain encoder bundle is not a decision bundle: one line, exit 1, no stdout
"$BIN" compile -m tests/fixtures/modernbert/mb_base -o "$T/enc.ane" --buckets 64 --batches 1 >/dev/null 2>&1
"$BIN" decide --backend mil -m "$T/enc.ane" -p x >"$T/out" 2>"$T/err"; rc=$?
if [ $rc -eq 1 ] && [ ! -s "$T/out" ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
    grep -q "partition.json" "$T/err"; then echo "PASS decide_mil_refuses_encoder_bundle"
else echo "FAIL decide_mil_refuses_encoder_bundle: rc $rc, $(cat "$T/err")"; fi
"$BIN" decide --backend gpu -m $FIX/dm_k3 -p x >"$T/out" 2>"$T/err"; rc=$?
if [ $rc -ne 0 ] && [ ! -s "$T/out" ] && grep -q "backend" "$T/err"; then
    echo "PASS decide_unknown_backend_fails"
else echo "FAIL decide_unknown_backend_fails: rc $rc"; fi
# a decision folder whose decision.json is broken: one line naming it, no bundle
mkdir -p "$T/broken"
cp $FIX/dm_k3/* "$T/broken/" 2>/dev/null
sed 's/"num_actions": 6/"num_actions": 0/' $FIX/dm_k3/decision.json >"$T/broken/decision.json"
"$BIN" compile -m "$T/broken" -o "$T/broken.ane" >"$T/out" 2>"$T/err"; rc=$?
if [ $rc -eq 1 ] && [ ! -e "$T/broken.ane" ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
    grep -q "decision.json" "$T/err" && grep -q "num_actions" "$T/err"; then
    echo "PASS decision_compile_bad_config_leaves_nothing"
else echo "FAIL decision_compile_bad_config_leaves_nothing: rc $rc, $(cat "$T/err")"; fi
rm -rf "$T"
