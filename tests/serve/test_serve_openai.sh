#!/bin/sh
# `nectar serve` ($NECTAR_BIN) driven by the official `openai` Python client
# (tools/test_server_openai.py) on the fake engine; expected answers from
# tests/fixtures/serve/expected.json. Runs only where /work/venv (or
# $NECTAR_PYTHON) has `openai`; otherwise SKIP. Loopback only, the server
# is always stopped at the end.
BIN=${NECTAR_BIN:-build/nectar}
PY=${NECTAR_PYTHON:-/work/venv/bin/python}
if ! [ -x "$PY" ] || ! "$PY" -c "import openai" >/dev/null 2>&1; then
    echo "SKIP openai_client: no python with the openai package ($PY)"
    exit 0
fi
TMP=$(mktemp -d)
"$BIN" serve --fake-engine -m tests/fixtures/serve/fake --port 0 --parallel 2 --ctx 256 \
    >"$TMP/out" 2>"$TMP/err" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
PORT=""
i=0
while [ $i -lt 100 ] && [ -z "$PORT" ]; do
    PORT=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$TMP/out" 2>/dev/null)
    [ -z "$PORT" ] && sleep 0.1
    i=$((i + 1))
done
if [ -z "$PORT" ]; then
    echo "FAIL openai_client: server did not start: $(cat "$TMP/err")"
    exit 1
fi
timeout 120 "$PY" tools/test_server_openai.py "http://127.0.0.1:$PORT"
rc=$?
kill $PID
wait $PID
src=$?
trap 'rm -rf "$TMP"' EXIT
if [ $src -eq 0 ]; then echo "PASS openai_server_clean_shutdown"
else echo "FAIL openai_server_clean_shutdown: exit status $src: $(tail -5 "$TMP/err")"; fi
exit $rc
