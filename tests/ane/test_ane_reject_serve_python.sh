#!/bin/sh
# A device that says no, through the server and the Python package: with
# the fake device refusing constructs (--ane-device fake:reject=RULE,...),
# `nectar serve --backend ane` answers a greedy /v1/completions request
# with the cpu backend's text (64 tokens of models/demo) and /metrics says
# where each kernel ran (nectar_model_placement); the Python package
# (Model(..., "ane", ane_device=...)) gives the cpu text for every rule
# alone and all together, on models/demo and on a Qwen3.5 fixture, and
# Model.placement says where the kernels ran and in which forms. The
# reference is `nectar run` on the cpu backend (fp32, from the checkpoint).
BIN=${NECTAR_BIN:-build/nectar}
# the regular build's library even in the sanitizer run: an ASan library
# cannot be loaded into an uninstrumented python
LIB=build/libnectar.so
[ "$(uname)" = Darwin ] && LIB=build/libnectar.0.dylib
T="-t 1"
. tests/serve/serve_lib.sh
TMP=$(mktemp -d)
SERVE_TMP_MADE=1
trap 'rm -rf "$TMP"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP serve_python_rejects: no python3"; exit 0; fi
N=64
PROMPT="In the beginning"
B="$TMP/demo.ane"
Q="$TMP/q35.ane"
QM=tests/fixtures/qwen35/tiny_text_untied
if ! "$BIN" compile -m models/demo -o "$B" $T >/dev/null 2>"$TMP/err" ||
    ! "$BIN" compile -m $QM -o "$Q" --ctx 256 --buckets 32,64 $T >/dev/null 2>"$TMP/err"; then
    fail compile_bundles "$(cat "$TMP/err")"
    exit 0
fi
"$BIN" run $T -m models/demo -p "$PROMPT" --temp 0 -n $N >"$TMP/demo.cpu" 2>/dev/null
"$BIN" run $T -m $QM -p "$PROMPT" --temp 0 -n $N >"$TMP/q35.cpu" 2>/dev/null

# the server: one request per setting, the text and the placement metric
for rule in all gather; do
    serve_launch "serve_reject_$rule" $T -m "$B" --backend ane --ane-device "fake:reject=$rule"
    python3 - "$PORT" "$N" "$PROMPT" "$TMP/demo.cpu" >"$TMP/o" 2>"$TMP/e" <<'EOF'
import json, sys, urllib.request
port, n, prompt, ref = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
body = json.dumps({"prompt": prompt, "max_tokens": n, "temperature": 0}).encode()
req = urllib.request.Request("http://127.0.0.1:%s/v1/completions" % port, body,
                             {"Content-Type": "application/json"})
text = json.load(urllib.request.urlopen(req))["choices"][0]["text"]
print("same" if text == open(ref).read().rstrip("\n") else "differs: " + repr(text)[:300])
EOF
    python3 -c "import sys, urllib.request; print(urllib.request.urlopen('http://127.0.0.1:%s/metrics' % sys.argv[1]).read().decode())" \
        "$PORT" >"$TMP/metrics" 2>>"$TMP/e"
    if [ "$(cat "$TMP/o")" = same ]; then
        pass "serve_reject_${rule}_gives_cpu_text"
    else
        fail "serve_reject_${rule}_gives_cpu_text" "$(head -c 300 "$TMP/o") / $(head -c 300 "$TMP/e")"
    fi
    want="kernels on the ANE"
    [ $rule = all ] && want="(layer_00/model.mil refused: compileModel: ANECCompile() FAILED"
    if grep -q "^nectar_model_placement{model=\"demo.ane\",placement=\"ane (fake device): layers 0-4: .*$want.*forms: .*\"} 1$" "$TMP/metrics"; then
        pass "serve_metrics_placement_reject_$rule"
    else
        fail "serve_metrics_placement_reject_$rule" "$(grep placement "$TMP/metrics" | head -c 600)"
    fi
    serve_stop "serve_reject_${rule}_stops_cleanly"
done

# the Python package, in one process: every rule alone and all together
RULES="gather multi-function mixed-shapes multi-output elementwise-only broadcast-matmul wide-conv all"
for m in demo q35; do
    if [ $m = demo ]; then bundle=$B; else bundle=$Q; fi
    PYTHONPATH=python NECTAR_LIBRARY="$LIB" python3 - "$bundle" "$TMP/$m.cpu" "$N" "$PROMPT" $RULES <<'EOF' >"$TMP/py" 2>&1
import sys
import nectar
bundle, ref, n, prompt, rules = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
want = open(ref).read().rstrip("\n")
for rule in rules:
    with nectar.Model(bundle, "ane", threads=1, ane_device="fake:reject=" + rule) as m:
        text = m.generate(prompt, max_tokens=n, temperature=0)
        where = m.placement
    ok = text == want and "kernels on the ANE" in where and "forms:" in where
    if rule == "all":
        ok = ok and "refused: compileModel" in where
    print("%s %s %s" % ("ok" if ok else "bad", rule, where if ok else repr(text)[:200] + " | " + where))
with nectar.Model(bundle, "mil", threads=1) as m:
    print("ok mil-placement" if "MIL interpreter" in m.placement else "bad mil " + m.placement)
EOF
    for r in $RULES mil-placement; do
        if grep -q "^ok $r" "$TMP/py"; then
            pass "python_reject_${r}_$m"
        else
            fail "python_reject_${r}_$m" "$(grep " $r" "$TMP/py" | head -c 400; tail -3 "$TMP/py")"
        fi
    done
done
