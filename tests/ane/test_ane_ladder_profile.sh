#!/bin/sh
# The compile ladder remembers (src/ane_host/ane_ladder.h): each program's
# outcome on a device -- per form, with the framework's error text -- goes
# into the probe profile NECTAR_ANE_PROFILE names, and the next run starts
# at the form that worked. Shown by counting compiles on the fake device:
# models/demo has one program per layer plus the head; refused as a whole
# (reject=multi-function) each layer costs 1 refused compile + 1 per
# function on the first run, and only the functions on the second. The
# text is the cpu backend's (fp32 from the checkpoint) every time. The
# ladder's order is data: a profile's "ladder_order" changes it.
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"
N=16
B="$TMP/demo.ane"
if ! "$BIN" compile -m models/demo -o "$B" $T >/dev/null 2>"$TMP/err"; then
    fail compile_demo "$(cat "$TMP/err")"
    exit 0
fi
"$BIN" run $T -m models/demo -p "In the beginning" --temp 0 -n $N >"$TMP/cpu" 2>/dev/null
layers=$(ls -d "$B"/layer_* | wc -l)
# profile, device settings, label: runs the bundle; $TMP/o text, $TMP/e stderr, prints the compiles
# (NECTAR_ANE_CPU=interp: the refused functions on the MIL interpreter, so
# the placement counts them per function rather than per layer)
run_ane() {
    NECTAR_ANE_CPU=interp NECTAR_ANE_PROFILE=$1 "$BIN" run $T --backend ane --ane-device "fake:$2" -m "$B" \
        -p "In the beginning" --temp 0 -n $N >"$TMP/o" 2>"$TMP/e"
    sed -n 's/.*; \([0-9]*\) programs compiled or loaded.*/\1/p' "$TMP/e"
}

P="$TMP/profile.json"
first=$(run_ane "$P" reject=multi-function)
if cmp -s "$TMP/o" "$TMP/cpu" && grep -q '"start": "function"' "$P" &&
    grep -q '"fake:reject=multi-function"' "$P" &&
    grep -q "InvalidProcedure: function 'qkv_s32': 12 procedures in one program" "$P"; then
    pass "first_run_records_refusal_with_framework_text ($first compiles)"
else
    fail first_run_records_refusal_with_framework_text "$(cat "$TMP/e" "$P" | head -c 800)"
fi
second=$(run_ane "$P" reject=multi-function)
if cmp -s "$TMP/o" "$TMP/cpu" && [ -n "$first" ] && [ "$second" -eq $((first - layers)) ] &&
    grep -q "(as recorded in the profile)" "$TMP/e"; then
    pass "second_run_starts_at_function_rung ($first then $second compiles, $layers layers)"
else
    fail second_run_starts_at_function_rung "first $first second $second: $(head -c 600 "$TMP/e")"
fi

# every rule: the functions refused again are remembered too, so the second
# run compiles only what went on the device: it skips each layer's refused
# whole program and the 45 functions refused alone (qkv, kv, attn of 3
# buckets; qkv and kv go straight to a program per output, the outputs rung)
P2="$TMP/all.json"
first=$(run_ane "$P2" reject=all)
second=$(run_ane "$P2" reject=all)
if cmp -s "$TMP/o" "$TMP/cpu" && grep -q '"refused_functions": "qkv_s32,' "$P2" &&
    grep -q '"split_functions": "qkv_s32,kv_s32,' "$P2" &&
    [ -n "$first" ] && [ "$second" -eq $((first - layers - layers * 9)) ]; then
    pass "reject_all_second_run_compiles_only_what_placed ($first then $second compiles)"
else
    fail reject_all_second_run_compiles_only_what_placed "first $first second $second"
fi

# the order is data: without the function rung a refused program goes
# straight to the CPU (one refused compile per layer + the head)
P3="$TMP/order.json"
echo '{"ladder_order": ["program", "cpu"]}' >"$P3"
n=$(run_ane "$P3" reject=multi-function)
if cmp -s "$TMP/o" "$TMP/cpu" && [ "$n" -eq $((layers + 1)) ] &&
    grep -q "layers 0-[0-9]*: 0/[0-9]* kernels on the ANE" "$TMP/e" &&
    grep -q '"ladder_order"' "$P3"; then
    pass "ladder_order_from_profile_skips_function_rung ($n compiles)"
else
    fail ladder_order_from_profile_skips_function_rung "$n: $(head -c 600 "$TMP/e")"
fi
echo '{"ladder_order": ["program", "wobble"]}' >"$P3"
if ! NECTAR_ANE_PROFILE=$P3 "$BIN" run $T --backend ane --ane-device fake -m "$B" -p x -n 2 \
    >"$TMP/o" 2>"$TMP/e" && [ ! -s "$TMP/o" ] && grep -q "ladder_order\[1\]" "$TMP/e" &&
    [ "$(wc -l <"$TMP/e")" -le 2 ]; then
    pass bad_ladder_order_is_one_line
else
    fail bad_ladder_order_is_one_line "$(cat "$TMP/o" "$TMP/e")"
fi

# the fake device records nothing unless told where (no user file in tests)
mkdir "$TMP/cache"
NECTAR_ANE_CACHE="$TMP/cache" "$BIN" run $T --backend ane --ane-device fake:reject=gather -m "$B" \
    -p x -n 2 >/dev/null 2>&1
if [ -z "$(ls "$TMP/cache")" ]; then
    pass fake_device_records_nothing_by_default
else
    fail fake_device_records_nothing_by_default "$(ls -R "$TMP/cache")"
fi

# a new probe keeps the ladder's record in the profile it replaces
cp "$P" "$TMP/cache/profile.json"
if NECTAR_ANE_CACHE="$TMP/cache" "$BIN" ane probe --device fake >"$TMP/o" 2>&1 &&
    grep -q '"fake:reject=multi-function"' "$TMP/cache/profile.json" &&
    grep -q '"cases"' "$TMP/cache/profile.json"; then
    pass probe_keeps_ladder_record
else
    fail probe_keeps_ladder_record "$(tail -3 "$TMP/o")"
fi
