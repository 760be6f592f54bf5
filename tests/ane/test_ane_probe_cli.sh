#!/bin/sh
# `nectar ane probe --device fake` ($NECTAR_BIN): the whole ladder runs on the
# fake device; the JSON names chip, OS and nectar version and holds >= 15
# cases; every case the checker accepts evaluates and matches the fp32
# interpreter (status ok), every case it rejects is reported as rejected
# with the rule (int32 gather indices, a 16-wide last axis); --device real
# off macOS and a bad flag are one-line errors. python3 reads the JSON.
. "$(dirname "$0")/../common/sh_test.sh"

if "$BIN" ane probe --device fake --work "$TMP/w" --json "$TMP/p.json" --no-save >"$TMP/out" 2>"$TMP/err"; then
    pass probe_fake_runs
else
    fail probe_fake_runs "$(cat "$TMP/err")"
fi

if python3 - "$TMP/p.json" >"$TMP/py" 2>&1 <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == "fake" and d["chip"] and d["os"] and d["nectar_version"], "header"
cases = d["cases"]
assert len(cases) >= 15, "only %d cases" % len(cases)
by = {c["id"]: c for c in cases}
for c in cases:
    if c["checker"] == "accepted":
        assert c["status"] == "ok", "%s: %s %s" % (c["id"], c["status"], c["error"])
        assert c["max_err"] <= 0.02 * max(1.0, c["ref_max"]), c["id"]
        assert c["eval_us"] > 0, c["id"]
    else:
        assert c["checker"].startswith("rejected [") and c["status"] == "rejected", c["id"]
assert by["gather_int32"]["checker"].startswith("rejected [ane-gather-indices]: ")
assert by["width16"]["checker"].startswith("rejected [ane-io-width]: ")
for ok in ("gather_uint16", "gather_int16", "softmax96", "elementwise_only", "multi_function",
           "chain4_async", "chain4_events", "surfaces_mixed", "surfaces_uniform", "surface_small",
           "palettized", "palettized6_grouped", "palettized8_grouped"):
    assert by[ok]["status"] == "ok", ok
assert by["gemm_tops"]["tops"] > 0 and by["matvec_bandwidth"]["gbps"] > 0
modes = {c["mode"] for c in cases}
assert modes == {"sync", "async", "async+events"}, modes
print(len(cases))
PY
    pass "probe_json_cases_and_verdicts ($(cat "$TMP/py") cases)"
else
    fail probe_json_cases_and_verdicts "$(tail -3 "$TMP/py")"
fi

if grep -q "^gather_int32 .* rejected" "$TMP/out" && grep -q "^chain4_events .*async+events .* ok" "$TMP/out"; then
    pass probe_prints_table
else
    fail probe_prints_table "$(head -5 "$TMP/out")"
fi

if [ "$(uname -s)" != Darwin ]; then
    if "$BIN" ane probe --device real --no-save >"$TMP/out" 2>"$TMP/err"; then
        fail probe_real_off_macos_is_an_error "succeeded"
    elif grep -q "only on macOS" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then
        pass probe_real_off_macos_is_an_error
    else
        fail probe_real_off_macos_is_an_error "$(cat "$TMP/err")"
    fi
fi
"$BIN" ane probe --bogus >/dev/null 2>&1
if [ $? -eq 2 ]; then pass probe_bad_flag_is_usage; else fail probe_bad_flag_is_usage "exit $?"; fi

# the option table's checks (tools/nectar/cli_opts.h), before anything runs
usage_error() { # name, expected stderr line (a grep -E pattern), arguments...
    name=$1 want=$2
    shift 2
    "$BIN" ane probe "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
        grep -Eq "$want" "$TMP/err"; then
        pass "$name"
    else
        fail "$name" "exit $rc, stderr '$(cat "$TMP/err")'"
    fi
}
usage_error probe_repeats_range_checked "^nectar ane probe: --repeats: '0' is not an integer in \[1, 10000\]\$" \
    --repeats 0 --no-save
usage_error probe_small_and_full_exclude "^nectar ane probe: --small and --full exclude each other\$" \
    --small --full --no-save
usage_error probe_no_positional "^nectar ane probe: unexpected argument 'x'\$" x
if "$BIN" ane probe --help >"$TMP/out" 2>"$TMP/err" && [ ! -s "$TMP/err" ] &&
    grep -q "^usage: nectar ane probe" "$TMP/out" && grep -q -- "--bundle DIR" "$TMP/out" &&
    grep -q "fake device's settings" "$TMP/out"; then
    pass probe_help_lists_options_and_fake_settings
else
    fail probe_help_lists_options_and_fake_settings "$(head -3 "$TMP/out") $(cat "$TMP/err")"
fi
