#!/bin/sh
# nectar.Decision from the package's sources (python/) over the regular
# build's shared library (an ASan one cannot be loaded into python), against
# the PyTorch reference of the decision fixtures: tests/decide/decision_python.py.
LIB=build/libnectar.so.0
[ "$(uname)" = Darwin ] && LIB=build/libnectar.0.dylib
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP decide_python: no python3"; exit 0; fi
if [ ! -f "$LIB" ]; then echo "SKIP decide_python: $LIB not built"; exit 0; fi
NECTAR_LIBRARY=$LIB PYTHONPATH=python python3 tests/decide/decision_python.py tests/fixtures
