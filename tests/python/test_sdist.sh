#!/bin/sh
# The Python package's source distribution (python/nectar_build.py's
# build_sdist, what `python -m build --sdist python` calls): it carries the
# Makefile, include/ and src/, and `pip install nectar-X.tar.gz` into a
# fresh venv, offline and outside the checkout, builds libnectar from those
# alone; the installed package then generates `nectar run --temp 0`'s text
# on the demo model. Slow (a whole library build, about a minute on two
# cores): SKIP where python3 has no venv module.
BIN=${NECTAR_BIN:-build/nectar}
T=${NECTAR_BUILD:-build}/tmp/test_sdist.$$
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP sdist: no python3"; exit 0; fi
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
    echo "SKIP sdist: python3 has no venv module (scripts/install-deps.sh --test installs it)"
    exit 0
fi
if [ ! -x "$BIN" ]; then echo "SKIP sdist: $BIN not built"; exit 0; fi
rm -rf "$T"; mkdir -p "$T/dist"; T=$(cd "$T" && pwd)
trap 'rm -rf "$T"' EXIT
ROOT=$(pwd)

# pypa's build front end where it is installed, else the PEP 517 hook itself
if python3 -m build --version >/dev/null 2>&1; then
    (cd python && python3 -m build --sdist --no-isolation --outdir "$T/dist" . >"$T/log" 2>&1)
else
    (cd python && python3 -c 'import sys, nectar_build; nectar_build.build_sdist(sys.argv[1])' \
        "$T/dist" >"$T/log" 2>&1)
fi
version=$(sed -n 's/^#define NECTAR_VERSION "\(.*\)"/\1/p' include/nectar.h)
SDIST=$T/dist/nectar-$version.tar.gz
if [ -f "$SDIST" ]; then
    pass=1
    tar tzf "$SDIST" >"$T/list"
    for f in PKG-INFO pyproject.toml nectar_build.py nectar/__init__.py nectar/py.typed \
        csrc/Makefile csrc/include/nectar.h csrc/src/api/api_model.c; do
        grep -qx "nectar-$version/$f" "$T/list" || { echo "FAIL sdist_holds_the_sources: no $f"; pass=0; }
    done
    if grep -q -e '/build/' -e '/tests/' -e '\.o$' "$T/list"; then
        echo "FAIL sdist_holds_the_sources: build outputs or tests: $(grep -e /build/ -e /tests/ -e '\.o$' "$T/list" | head -3)"
        pass=0
    fi
    [ $pass = 1 ] && echo "PASS sdist_holds_the_sources"
else
    echo "FAIL sdist_builds: $(tail -3 "$T/log")"
    exit 1
fi

python3 -m venv "$T/venv" >"$T/log" 2>&1 || { echo "FAIL sdist_venv: $(tail -1 "$T/log")"; exit 1; }
# outside the checkout, nothing from PyPI, no hint of where the sources are
cd "$T" || exit 1
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u NECTAR_SOURCE_DIR -u NECTAR_BUILD_DIR PIP_NO_INPUT=1 \
    timeout 600 "$T/venv/bin/python" -m pip install -q --no-index --no-cache-dir \
    --disable-pip-version-check "$SDIST" >"$T/log" 2>&1; then
    echo "PASS pip_install_of_the_sdist_builds_libnectar"
else
    echo "FAIL pip_install_of_the_sdist_builds_libnectar: $(tail -3 "$T/log")"
    exit 1
fi
"$ROOT/$BIN" run -t 1 -m "$ROOT/models/demo" -p "In the beginning" --temp 0 -n 16 >"$T/want" \
    2>"$T/err" || { echo "FAIL sdist_package_generates: nectar run: $(tail -1 "$T/err")"; exit 1; }
env -u NECTAR_LIBRARY "$T/venv/bin/python" - "$ROOT/models/demo" "$T/want" "$version" <<'PY'
import os, sys
import nectar
demo, want, version = sys.argv[1:4]
inside = nectar._lib.LIB._name.startswith(os.path.dirname(nectar.__file__))
got = nectar.Model(demo, threads=1).generate("In the beginning", 16, temperature=0)
ok = inside and nectar.__version__ == version and got.encode() == open(want, "rb").read()
print(("PASS %s" if ok else "FAIL %s: " + repr((nectar._lib.LIB._name, nectar.__version__, got)))
      % "sdist_package_generates_as_nectar_run")
sys.exit(0 if ok else 1)
PY
