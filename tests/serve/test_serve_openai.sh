#!/bin/sh
# `nectar serve` ($NECTAR_BIN) driven by the official `openai` Python client
# (tools/test_server_openai.py) on the fake engine; expected answers from
# tests/fixtures/serve/expected.json. Runs only where /work/venv (or
# $NECTAR_PYTHON) has `openai`; otherwise SKIP. Loopback only, the server
# is always stopped at the end.
PY=${NECTAR_PYTHON:-/work/venv/bin/python}
if ! [ -x "$PY" ] || ! "$PY" -c "import openai" >/dev/null 2>&1; then
    echo "SKIP openai_client: no python with the openai package ($PY)"
    exit 0
fi
. tests/serve/serve_lib.sh
serve_start openai_client --parallel 2 --ctx 256
timeout 120 "$PY" tools/test_server_openai.py "http://127.0.0.1:$PORT"
rc=$?
serve_stop openai_server_clean_shutdown || rc=1
exit $rc
