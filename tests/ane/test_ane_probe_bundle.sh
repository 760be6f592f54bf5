#!/bin/sh
# `nectar ane probe --bundle DIR` (src/ane_host/ane_bundle_probe.c): every
# program of the user's bundle compiled whole, per sequence bucket and per
# function, on the fake device told what to refuse, and a form recommended
# for each disputed construct. The compile count is checked against the
# manifest (per program: 1 + its buckets + its functions, counted here in
# Python from manifest.json).
. "$(dirname "$0")/../common/sh_test.sh"
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP probe_bundle: no python3"; exit 0; fi
export NECTAR_ANE_CACHE="$TMP/cache"
B="$TMP/demo.ane"
if ! "$BIN" compile -m models/demo -o "$B" -t 1 >/dev/null 2>"$TMP/err"; then
    fail compile_demo "$(cat "$TMP/err")"
    exit 0
fi
want=$(python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))
print(sum(1 + len({f['seq'] for f in p['functions']}) + len(p['functions']) for p in m['programs']))
" "$B/manifest.json")
layers=$(ls -d "$B"/layer_* | wc -l)

"$BIN" ane probe --bundle "$B" --device fake >"$TMP/o" 2>&1
if grep -q "^$want programs compiled or loaded" "$TMP/o" &&
    grep -q "program split: layer (the default): every program compiled whole" "$TMP/o" &&
    grep -q "nothing here runs on an ANE" "$TMP/o"; then
    pass "probe_bundle_compiles_whole_per_bucket_per_function ($want compiles)"
else
    fail probe_bundle_compiles_whole_per_bucket_per_function "want $want: $(cat "$TMP/o")"
fi

"$BIN" ane probe --bundle "$B" --device fake:reject=multi-function >"$TMP/o" 2>&1
if [ "$(grep -c "^layer_.* refused .*12 procedures in one program" "$TMP/o")" -eq "$layers" ] &&
    grep -q "program split: function -- $layers of $((layers + 1)) programs refused whole" "$TMP/o"; then
    pass probe_bundle_recommends_function_split_when_multi_function_refused
else
    fail probe_bundle_recommends_function_split_when_multi_function_refused "$(cat "$TMP/o")"
fi

"$BIN" ane probe --bundle "$B" --device fake:reject=broadcast-matmul --json "$TMP/p.json" >"$TMP/o" 2>&1
if grep -q "kernel attn refused alone (.*broadcasts over batch dims.*try --attention broadcast|grouped" "$TMP/o" &&
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
assert [p['path'] for p in d['programs']] == [p['path'] for p in m['programs']]
assert d['compiles'] == int(sys.argv[3]) and 'attn' in d['recommendations']
assert all(p['refused_kernels'] == 'attn' for p in d['programs'] if p['path'].startswith('layer_'))
" "$TMP/p.json" "$B/manifest.json" "$want"; then
    pass probe_bundle_names_refused_kernel_and_its_options
else
    fail probe_bundle_names_refused_kernel_and_its_options "$(cat "$TMP/o")"
fi
# the grouped form avoids the refused construct: recompiled, every kernel compiles
"$BIN" compile -m models/demo -o "$TMP/g.ane" -t 1 --attention grouped >/dev/null 2>&1
if "$BIN" ane probe --bundle "$TMP/g.ane" --device fake:reject=broadcast-matmul >"$TMP/o" 2>&1 &&
    grep -q "program split: layer (the default)" "$TMP/o"; then
    pass probe_bundle_recommended_form_compiles
else
    fail probe_bundle_recommended_form_compiles "$(cat "$TMP/o")"
fi

if ! "$BIN" ane probe --bundle "$TMP/nope" --device fake >"$TMP/o" 2>"$TMP/e" &&
    [ "$(wc -l <"$TMP/e")" -le 2 ] && grep -q "nope" "$TMP/e"; then
    pass probe_bundle_missing_is_one_line
else
    fail probe_bundle_missing_is_one_line "$(cat "$TMP/o" "$TMP/e")"
fi
