#!/bin/sh
# `nectar serve` ($NECTAR_BIN) driven by the official `openai` Python client
# (tools/test_server_openai.py) on the fake engine; expected answers from
# tests/fixtures/serve/expected.json. The Python is $NECTAR_PYTHON, else the
# venv `make check` makes (build/venv, by scripts/install-deps.sh --test),
# else python3; SKIP when it lacks `openai`. Loopback only, the server is
# always stopped at the end.
PY=${NECTAR_PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x build/venv/bin/python ]; then PY=build/venv/bin/python; else PY=python3; fi
fi
if ! "$PY" -c "import openai" >/dev/null 2>&1; then
    echo "SKIP openai_client: $PY has no openai package (make check, or scripts/install-deps.sh --test, installs it in build/venv)"
    exit 0
fi
. tests/serve/serve_lib.sh
serve_start openai_client --parallel 2 --ctx 256
timeout 120 "$PY" tools/test_server_openai.py "http://127.0.0.1:$PORT"
rc=$?
serve_stop openai_server_clean_shutdown || rc=1
exit $rc
