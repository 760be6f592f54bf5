#!/bin/sh
# `nectar ane doctor` (docs/ane-first-run.md): one command runs the probe,
# compiles models/demo, runs it through the compile ladder on the (fake)
# device and on the cpu backend, and writes one JSON file. Checked against
# independent outputs: the probe's case list (`nectar ane probe --json`),
# the cpu text of `nectar run`; a refusing device still gives that text;
# an unwritable output is one line and leaves no file.
. "$(dirname "$0")/../common/sh_test.sh"
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP doctor: no python3"; exit 0; fi
export NECTAR_ANE_CACHE="$TMP/cache"
"$BIN" run -t 1 -m models/demo -p "In the beginning" --temp 0 -n 64 >"$TMP/cpu" 2>/dev/null
"$BIN" ane probe --device fake --no-save --json "$TMP/probe.json" >/dev/null 2>&1
if "$BIN" ane doctor -t 1 -o "$TMP/d.json" --ane-device fake:reject=all >"$TMP/o" 2>"$TMP/e" &&
    grep -q "the fake device (the MIL interpreter): nothing here runs on an ANE" "$TMP/o" &&
    python3 - "$TMP/d.json" "$TMP/probe.json" "$TMP/cpu" <<'PY'
import json, sys
d, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
cpu = open(sys.argv[3]).read().rstrip("\n")
r = d["run"]
assert d["device"] == "fake:reject=all" and "nothing here ran on an ANE" in d["note"], d["note"]
assert [c["id"] for c in d["probe"]["cases"]] == [c["id"] for c in p["cases"]]
assert r["cpu_text"] == cpu, r["cpu_text"][:80]
assert r["ane_text"] == cpu and r["same_text"] is True and r["tokens"] == 64
assert "(layer_00/model.mil refused: compileModel: ANECCompile() FAILED" in r["placement"]
PY
then
    pass "doctor_writes_probe_and_cpu_matching_run ($(sed -n 's/^probe: //p' "$TMP/o"))"
else
    fail doctor_writes_probe_and_cpu_matching_run "$(cat "$TMP/o" "$TMP/e" | tail -5)"
fi
if [ -z "$(ls "$TMP/cache" | grep doctor-)" ]; then
    pass doctor_removes_its_work_folder
else
    fail doctor_removes_its_work_folder "$(ls "$TMP/cache")"
fi
if ! "$BIN" ane doctor -t 1 -n 2 -o "$TMP/no/such/d.json" >"$TMP/o" 2>"$TMP/e" &&
    [ ! -e "$TMP/no/such/d.json" ] && [ "$(wc -l <"$TMP/e")" -le 2 ] && grep -q "no/such" "$TMP/e"; then
    pass doctor_unwritable_output_is_one_line
else
    fail doctor_unwritable_output_is_one_line "$(cat "$TMP/e")"
fi
if "$BIN" ane --help | grep -q "ane doctor" && "$BIN" ane doctor --help | grep -q "send back"; then
    pass doctor_help
else
    fail doctor_help "$("$BIN" ane doctor --help 2>&1 | head -3)"
fi
