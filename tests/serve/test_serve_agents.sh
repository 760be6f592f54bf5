#!/bin/sh
# `nectar serve` ($NECTAR_BIN, fake engine) driven by the official `openai`
# Python client as agent frameworks use it: structured output and tool
# calls (tools/test_server_agents.py), then the same for Qwen3.5's XML tool
# calls (a fake engine reciting one, --qwen35) and Llama 3's tagless JSON
# ones (--llama3). The Python is $NECTAR_PYTHON, else
# build/venv, else python3; SKIP when it lacks `openai`. Loopback only, the
# server is always stopped at the end.
PY=${NECTAR_PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x build/venv/bin/python ]; then PY=build/venv/bin/python; else PY=python3; fi
fi
if ! "$PY" -c "import openai, pydantic" >/dev/null 2>&1; then
    echo "SKIP openai_agents: $PY has no openai package (scripts/install-deps.sh --test installs it in build/venv)"
    exit 0
fi
. tests/serve/serve_lib.sh
serve_start openai_agents --parallel 2 --ctx 1024
timeout 300 "$PY" tools/test_server_agents.py "http://127.0.0.1:$PORT"
rc=$?
serve_stop openai_agents_server_clean_shutdown || rc=1

SERVE_FIXTURE=tests/fixtures/serve/fake35
serve_start openai_agents_qwen35 --parallel 2 --ctx 2048 --chat-template qwen3.5
timeout 300 "$PY" tools/test_server_agents.py --qwen35 "http://127.0.0.1:$PORT" || rc=1
serve_stop openai_agents_qwen35_server_clean_shutdown || rc=1

SERVE_FIXTURE=tests/fixtures/serve/fake_llama3
serve_start openai_agents_llama3 --parallel 2 --ctx 2048 --chat-template llama3
timeout 300 "$PY" tools/test_server_agents.py --llama3 "http://127.0.0.1:$PORT" || rc=1
serve_stop openai_agents_llama3_server_clean_shutdown || rc=1
exit $rc
