#!/bin/sh
# The Python package (python/): `pip install ./python` into a fresh venv under
# the build folder, offline (--no-index: the package and its build need
# nothing from PyPI), then tests/python/test_python.py against the C command
# line's own output (`nectar run --temp 0` on the demo model, `nectar embed`
# on the encoder fixture) and HF references; then test_python_serve.py
# against `nectar serve` on the same model (tools, response_format,
# logprobs: the same requests must give the same answers). The package gets the regular
# library build (build/) even in the sanitizer run: an ASan library cannot
# be loaded into an uninstrumented python.
BIN=${NECTAR_BIN:-build/nectar}
T=${NECTAR_BUILD:-build}/tmp/test_python.$$
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP python: no python3"; exit 0; fi
if [ ! -x "$BIN" ]; then echo "SKIP python: $BIN not built"; exit 0; fi
rm -rf "$T"; mkdir -p "$T"; T=$(cd "$T" && pwd)
trap 'rm -rf "$T"' EXIT
ROOT=$(pwd)

if ! python3 -m venv "$T/venv" >"$T/log" 2>&1; then
    echo "FAIL python_venv: $(tail -1 "$T/log") (scripts/install-deps.sh --test installs python3-venv)"
    exit 1
fi
# not a sub-make of make check: the package's build runs its own make
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL NECTAR_BUILD_DIR="$ROOT/build" PIP_NO_INPUT=1 \
    "$T/venv/bin/python" -m pip install -q --no-index --no-cache-dir --disable-pip-version-check ./python \
    >"$T/log" 2>&1; then
    echo "PASS pip_install_builds_the_package_offline"
else
    echo "FAIL pip_install_builds_the_package_offline: $(tail -3 "$T/log")"
    exit 1
fi

PROMPT="In the beginning"
N=32
"$BIN" run -t 1 -m models/demo -p "$PROMPT" --temp 0 -n $N >"$T/run.txt" 2>"$T/err" ||
    { echo "FAIL python_references: nectar run: $(tail -1 "$T/err")"; exit 1; }
# sampling as generation_config.json says (no --temp), seeded
"$BIN" run -t 1 -m models/demo -p "$PROMPT" --seed 7 -n $N >"$T/sampled.txt" 2>"$T/err" ||
    { echo "FAIL python_references: nectar run --seed: $(tail -1 "$T/err")"; exit 1; }
ENC=tests/fixtures/modernbert/mb_base
"$BIN" embed -t 1 -m $ENC -p Hello -o "$T/embed.json" 2>"$T/err" ||
    { echo "FAIL python_references: nectar embed: $(tail -1 "$T/err")"; exit 1; }
# `nectar serve` on the same model, for test_python_serve.py: one slot and
# one thread, as the Model there (the same arithmetic, the same tokens)
. tests/serve/serve_lib.sh
serve_launch python_against_server -m models/demo -t 1 -np 1
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$T" "$TMP"' EXIT
# from outside the tree, so that `import nectar` cannot find python/nectar
cd "$T" || exit 1
rc=0
env -u NECTAR_LIBRARY "$T/venv/bin/python" "$ROOT/tests/python/test_python.py" "$ROOT/models/demo" \
    "$T/run.txt" "$PROMPT" $N "$ROOT/$ENC" "$T/embed.json" "$ROOT/tests/fixtures" "$T/sampled.txt" ||
    rc=1
env -u NECTAR_LIBRARY "$T/venv/bin/python" "$ROOT/tests/python/test_python_serve.py" \
    "$ROOT/models/demo" "http://127.0.0.1:$PORT" || rc=1
exit $rc
