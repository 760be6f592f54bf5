#!/bin/sh
# The probe's 8-bit look-up-table case (palettized8_grouped: uint8 indices
# into a 256-entry fp16 table per 16 output channels, the form `nectar
# compile --palettize 8` writes): it runs on the fake device and matches
# the fp32 interpreter; on a fake device that refuses palettized weights
# (reject=palettized) the three palettized cases fail to compile with the
# framework's text, and a profile saying so makes `mil check --ane-profile`
# refuse an 8-bit bundle naming the case, where the permissive profile
# passes it. python3 reads the JSON.
. "$(dirname "$0")/../common/sh_test.sh"
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP probe_lut: no python3"; exit 0; fi
export NECTAR_ANE_CACHE="$TMP/cache"

"$BIN" ane probe --device fake --work "$TMP/w" --json "$TMP/ok.json" --no-save >"$TMP/o" 2>&1
if python3 - "$TMP/ok.json" >"$TMP/py" 2>&1 <<'PY'; then
import json, sys
c = {c["id"]: c for c in json.load(open(sys.argv[1]))["cases"]}["palettized8_grouped"]
assert c["checker"] == "accepted" and c["status"] == "ok", c
assert 0 < c["ref_max"] and c["max_err"] <= 0.01 * c["ref_max"], c
print("max_err %.2g of %.2g" % (c["max_err"], c["ref_max"]))
PY
    pass "probe_lut8_runs_on_fake_device ($(cat "$TMP/py"))"
else
    fail probe_lut8_runs_on_fake_device "$(cat "$TMP/py")"
fi

"$BIN" ane probe --device fake:reject=palettized --work "$TMP/w2" --json "$TMP/no.json" --no-save \
    >"$TMP/o" 2>&1
if python3 - "$TMP/no.json" >"$TMP/py" 2>&1 <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == "fake:reject=palettized", d["device"]
for c in d["cases"]:
    lut = c["id"].startswith("palettized")
    if lut:
        assert c["status"] == "compile failed", c
        assert "ANECCompile() FAILED" in c["error"] and "reject=palettized" in c["error"], c
    elif c["checker"] == "accepted":
        assert c["status"] == "ok", c
PY
    pass probe_lut_refused_with_framework_text
else
    fail probe_lut_refused_with_framework_text "$(cat "$TMP/py")"
fi

B="$TMP/p8.ane"
if ! "$BIN" compile -m models/demo -o "$B" -t 1 --palettize 8 >/dev/null 2>"$TMP/e"; then
    fail compile_palettize8 "$(cat "$TMP/e")"
    exit 0
fi
if ! "$BIN" mil check --target ane --ane-profile "$TMP/no.json" "$B" >"$TMP/o" 2>&1 &&
    grep -q "ane-lut" "$TMP/o" && grep -q "probe case palettized8_grouped" "$TMP/o" &&
    "$BIN" mil check --target ane --ane-profile "$TMP/ok.json" "$B" >"$TMP/o2" 2>&1; then
    pass check_lut_follows_the_profile
else
    fail check_lut_follows_the_profile "$(head -c 600 "$TMP/o"; head -c 300 "$TMP/o2")"
fi
