#!/bin/sh
# Installs the system libraries nectar builds against when they are missing:
# Debian/Ubuntu -dev packages through apt-get, Homebrew formulae on macOS.
# Nothing is downloaded when everything is already there.
#
# `install-deps.sh fuzz` instead installs what `make fuzz` needs: clang with
# its libFuzzer and sanitizer runtimes (Debian ships them in libclang-rt-*-dev,
# only recommended by clang, so a --no-install-recommends clang lacks them);
# `install-deps.sh fuzz-check` only says whether they are there.
set -e

# Does clang link a libFuzzer target with ASan/UBSan?
fuzz_ok() {
    command -v clang >/dev/null 2>&1 || return 1
    d=$(mktemp -d) || return 1
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' >"$d/t.c"
    clang -fsanitize=fuzzer,address,undefined "$d/t.c" -o "$d/t" >/dev/null 2>&1
    rc=$?
    rm -rf "$d"
    return $rc
}

case "${1:-}" in
fuzz-check)
    fuzz_ok && exit 0
    echo "make fuzz: clang cannot link -fsanitize=fuzzer here; run: sh scripts/install-deps.sh fuzz" >&2
    exit 1
    ;;
fuzz)
    fuzz_ok && exit 0
    echo "install-deps: installing clang with libFuzzer"
    if [ "$(uname -s)" = Darwin ]; then
        # Apple's clang has no libFuzzer; Homebrew's llvm does (put it first on PATH).
        brew install llvm
        exit 0
    fi
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang libclang-rt-dev
    fuzz_ok || { echo "install-deps: clang still cannot link -fsanitize=fuzzer" >&2; exit 1; }
    exit 0
    ;;
esac

PKGS_PC="libpcre2-8 libutf8proc jansson libmicrohttpd"
missing=""
if command -v pkg-config >/dev/null 2>&1; then
    for p in $PKGS_PC; do pkg-config --exists "$p" || missing="$missing $p"; done
else
    missing="pkg-config $PKGS_PC"
fi
[ -z "$missing" ] && exit 0
echo "install-deps: missing:$missing"
case "$(uname -s)" in
Darwin)
    command -v brew >/dev/null 2>&1 || { echo "install-deps: install Homebrew first" >&2; exit 1; }
    brew install pkg-config pcre2 utf8proc jansson libmicrohttpd
    ;;
*)
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    if command -v apt-get >/dev/null 2>&1; then
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq pkg-config make gcc \
            libpcre2-dev libutf8proc-dev libjansson-dev libmicrohttpd-dev
    else
        echo "install-deps: please install pcre2, utf8proc, jansson, libmicrohttpd (-dev) and pkg-config" >&2
        exit 1
    fi
    ;;
esac
