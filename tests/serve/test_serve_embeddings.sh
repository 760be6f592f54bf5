#!/bin/sh
# `nectar serve` ($NECTAR_BIN) hosting several models: one server with the
# demo generator, two sentence-transformers encoders and a reranker, one with
# an encoder alone, one with two generators and an encoder, driven by the official `openai` client
# (tools/test_server_embeddings.py) against sentence-transformers' and HF's
# numbers in tests/fixtures/st (tools/make_st_fixtures.py). The Python is
# $NECTAR_PYTHON, else build/venv (scripts/install-deps.sh --test), else
# python3; SKIP when it lacks `openai`. Loopback only; the servers are
# stopped (SIGTERM, exit status 0) at the end.
PY=${NECTAR_PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x build/venv/bin/python ]; then PY=build/venv/bin/python; else PY=python3; fi
fi
if ! "$PY" -c "import openai" >/dev/null 2>&1; then
    echo "SKIP serve_embeddings: $PY has no openai package (scripts/install-deps.sh --test installs it in build/venv)"
    exit 0
fi
ST=tests/fixtures/st
. tests/serve/serve_lib.sh
TMP=$(mktemp -d)
SERVE_TMP_MADE=1
trap 'rm -rf "$TMP"' EXIT

# The texts' ids without special tokens, from nectar's tokenizer (byte-exact
# with HF's, tests/encoders/test_encoder_tokenizers).
"$PY" - "$ST/st_max/ref.json" "$BIN" "$ST/st_max" >"$TMP/ids.json" <<'PYEOF' || { echo "FAIL serve_embeddings: tokenize"; exit 1; }
import json, subprocess, sys
texts = json.load(open(sys.argv[1]))["texts"]
out = {}
for t in texts:
    r = subprocess.run([sys.argv[2], "tokenize", "-m", sys.argv[3], "-p", t], capture_output=True,
                       text=True, check=True)
    out[t] = [int(x) for x in r.stdout.split()]
json.dump(out, sys.stdout)
PYEOF

rc=0
serve_launch serve_embeddings -t 1 -m models/demo -m $ST/st_max -m $ST/st_mean -m $ST/rerank
timeout 120 "$PY" tools/test_server_embeddings.py "http://127.0.0.1:$PORT" "$TMP/ids.json" || rc=1
serve_stop serve_several_models_clean_shutdown || rc=1

serve_launch serve_encoders_only -t 1 -m $ST/st_max
timeout 60 "$PY" tools/test_server_embeddings.py "http://127.0.0.1:$PORT" "$TMP/ids.json" --encoders-only || rc=1
serve_stop serve_encoders_only_clean_shutdown || rc=1

# two generators and an encoder: the request's model picks the generator
"$BIN" run -t 1 -m tests/fixtures/qwen3/tiny_gqa2 -p In -n 16 --temp 0 >"$TMP/tiny.txt" 2>/dev/null ||
    { echo "FAIL serve_generators: nectar run on tiny_gqa2"; exit 1; }
serve_launch serve_generators -t 1 --ctx 256 -m models/demo -m tests/fixtures/qwen3/tiny_gqa2 -m $ST/st_max
timeout 120 "$PY" tools/test_server_embeddings.py "http://127.0.0.1:$PORT" --generators "$TMP/tiny.txt" || rc=1
serve_stop serve_generators_clean_shutdown || rc=1
exit $rc
