#!/bin/sh
# The lowering forms as probe-profile keys (src/bundle/forms_profile.h):
# a run on a device that refuses records, per form of the bundle, how many
# kernels it accepted and refused with the framework's text; `nectar compile
# --ane-profile` then moves each refused form to the next one no device
# refused, and a bundle in that form runs with every kernel on the device.
# Shown on the fake device's reject rules (docs/ane-bridge.md); the text is
# the cpu backend's (fp32 from the checkpoint) every time.
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP forms_profile: no python3"; exit 0; fi
export NECTAR_ANE_CACHE="$TMP/cache"
N=16
B="$TMP/demo.ane"
if ! "$BIN" compile -m models/demo -o "$B" $T >/dev/null 2>"$TMP/err"; then
    fail compile_demo "$(cat "$TMP/err")"
    exit 0
fi
"$BIN" run $T -m models/demo -p "In the beginning" --temp 0 -n $N >"$TMP/cpu" 2>/dev/null
layers=$(ls -d "$B"/layer_* | wc -l)
fns=$((layers * 12))
# profile, device settings, bundle: runs it; $TMP/o text, $TMP/e stderr
run_ane() {
    NECTAR_ANE_PROFILE=$1 "$BIN" run $T --backend ane --ane-device "fake:$2" -m "$3" \
        -p "In the beginning" --temp 0 -n $N >"$TMP/o" 2>"$TMP/e"
}
# the value of plan.forms.KEY in a bundle's manifest
form() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['plan']['forms'][sys.argv[2]])" "$1/manifest.json" "$2"; }
# profile, device, key, value: "ok refused" as recorded
counts() {
    python3 -c "
import json, sys
e = json.load(open(sys.argv[1]))['forms'][sys.argv[2]][sys.argv[3]][sys.argv[4]]
print(e['ok'], e['refused'])" "$@" 2>/dev/null
}

P="$TMP/p.json"
D=reject=broadcast-matmul
run_ane "$P" $D "$B"
# every attn kernel refused (15 = 5 layers x 3 buckets); qkv, kv accepted
if cmp -s "$TMP/o" "$TMP/cpu" && [ "$(counts "$P" "fake:$D" attention broadcast)" = "0 $((layers * 3))" ] &&
    [ "$(counts "$P" "fake:$D" rope conv)" = "$((layers * 3)) 0" ] &&
    [ "$(counts "$P" "fake:$D" kv_update onehot)" = "$((layers * 3)) 0" ] &&
    grep -q "broadcasts over batch dims" "$P" &&
    grep -q "the probe profile suggests compiling with --attention grouped" "$TMP/e"; then
    pass "run_records_each_form_with_its_counts (attention broadcast: 0 ok, $((layers * 3)) refused)"
else
    fail run_records_each_form_with_its_counts "$(head -c 800 "$TMP/e"; head -c 1500 "$P")"
fi

G="$TMP/g.ane"
if "$BIN" compile -m models/demo -o "$G" $T --ane-profile "$P" --ane-device "fake:$D" \
    >/dev/null 2>"$TMP/ce" && [ "$(form "$G" attention)" = grouped ] &&
    [ "$(form "$G" kv_update)" = onehot ] &&
    grep -q "forms from the probe profile .*--attention grouped (broadcast refused" "$TMP/ce"; then
    pass compile_takes_the_suggested_form
else
    fail compile_takes_the_suggested_form "$(cat "$TMP/ce")"
fi
run_ane "$P" $D "$G"
if cmp -s "$TMP/o" "$TMP/cpu" && grep -q "layers 0-$((layers - 1)): $fns/$fns kernels on the ANE" "$TMP/e" &&
    [ "$(counts "$P" "fake:$D" attention grouped)" = "$((layers * 3)) 0" ] &&
    ! grep -q "suggests compiling" "$TMP/e"; then
    pass "suggested_form_runs_every_kernel_on_the_device ($fns/$fns, the cpu's text)"
else
    fail suggested_form_runs_every_kernel_on_the_device "$(head -c 800 "$TMP/e")"
fi
# the doctor compiles in the forms the profile suggests, and sends them back
if NECTAR_ANE_PROFILE=$P "$BIN" ane doctor -t 1 -n 8 -o "$TMP/d.json" --ane-device "fake:$D" \
    >"$TMP/do" 2>&1 && python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); r = d['run']
assert '--attention grouped' in r['forms'], r.get('forms')
assert r['same_text'] and ' %s/%s kernels on the ANE' % (sys.argv[2], sys.argv[2]) in r['placement'], r
assert d['forms']['fake:reject=broadcast-matmul']['attention']['grouped']['refused'] == 0
" "$TMP/d.json" $fns; then
    pass doctor_compiles_in_the_suggested_forms
else
    fail doctor_compiles_in_the_suggested_forms "$(tail -5 "$TMP/do")"
fi
# a form named on the command line is kept
if "$BIN" compile -m models/demo -o "$TMP/k.ane" $T --ane-profile "$P" --ane-device "fake:$D" \
    --attention=broadcast >/dev/null 2>"$TMP/ce" && [ "$(form "$TMP/k.ane" attention)" = broadcast ] &&
    grep -q "forms: --attention broadcast kept as given" "$TMP/ce"; then
    pass compile_keeps_forms_given
else
    fail compile_keeps_forms_given "$(cat "$TMP/ce")"
fi
# a device the profile knows nothing of: the defaults
if "$BIN" compile -m models/demo -o "$TMP/r.ane" $T --ane-profile "$P" --ane-device real \
    >/dev/null 2>"$TMP/ce" && [ "$(form "$TMP/r.ane" attention)" = broadcast ] &&
    grep -q "records no refused form" "$TMP/ce"; then
    pass compile_profile_is_per_device
else
    fail compile_profile_is_per_device "$(cat "$TMP/ce")"
fi

# multi-function programs refused: the split walks layer -> kernel -> function
P2="$TMP/mf.json"
D2=reject=multi-function
run_ane "$P2" $D2 "$B"
ok1=$(cmp -s "$TMP/o" "$TMP/cpu" && echo y)
"$BIN" compile -m models/demo -o "$TMP/k1.ane" $T --ane-profile "$P2" --ane-device "fake:$D2" \
    >/dev/null 2>&1
s1=$(form "$TMP/k1.ane" program_split)
run_ane "$P2" $D2 "$TMP/k1.ane"
ok2=$(cmp -s "$TMP/o" "$TMP/cpu" && echo y)
"$BIN" compile -m models/demo -o "$TMP/k2.ane" $T --ane-profile "$P2" --ane-device "fake:$D2" \
    >/dev/null 2>&1
s2=$(form "$TMP/k2.ane" program_split)
run_ane "$P2" $D2 "$TMP/k2.ane"
if [ "$ok1$ok2" = yy ] && [ "$s1" = kernel ] && [ "$s2" = function ] && cmp -s "$TMP/o" "$TMP/cpu" &&
    grep -q "layers 0-$((layers - 1)): $fns/$fns kernels on the ANE" "$TMP/e" &&
    [ "$(counts "$P2" "fake:$D2" program_split layer)" = "0 $layers" ] &&
    [ "$(counts "$P2" "fake:$D2" program_split kernel)" = "0 $((layers * 4))" ]; then
    pass "program_split_walks_layer_kernel_function (the cpu's text at each step)"
else
    fail program_split_walks_layer_kernel_function "$s1 $s2 $ok1$ok2: $(head -c 600 "$TMP/e")"
fi

# the probe on the bundle records the forms too, and prints the suggestion
P3="$TMP/probe.json"
if NECTAR_ANE_PROFILE=$P3 "$BIN" ane probe --bundle "$B" --device "fake:$D" --json "$TMP/pj" \
    >"$TMP/po" 2>&1 && grep -q "suggests: --attention grouped (broadcast refused" "$TMP/po" &&
    [ "$(counts "$P3" "fake:$D" attention broadcast)" = "0 $((layers * 3))" ] &&
    python3 -c "
import json, sys
assert json.load(open(sys.argv[1]))['suggested_options'] == '--attention grouped'" "$TMP/pj"; then
    pass probe_bundle_records_forms_and_suggests
else
    fail probe_bundle_records_forms_and_suggests "$(head -c 800 "$TMP/po")"
fi
# --no-save: the suggestion, no file
if NECTAR_ANE_PROFILE=$TMP/none.json "$BIN" ane probe --bundle "$B" --device "fake:$D" --no-save \
    >"$TMP/po" 2>&1 && grep -q "suggests: --attention grouped" "$TMP/po" && [ ! -e "$TMP/none.json" ]; then
    pass probe_bundle_no_save_writes_nothing
else
    fail probe_bundle_no_save_writes_nothing "$(head -c 600 "$TMP/po")"
fi

if ! "$BIN" compile -m models/demo -o "$TMP/x.ane" --ane-profile "$TMP/nope.json" >"$TMP/o" \
    2>"$TMP/ce" && [ "$(wc -l <"$TMP/ce")" -eq 1 ] && grep -q "nope.json: no such file" "$TMP/ce" &&
    [ ! -e "$TMP/x.ane" ]; then
    pass missing_profile_is_one_line
else
    fail missing_profile_is_one_line "$(cat "$TMP/ce")"
fi
