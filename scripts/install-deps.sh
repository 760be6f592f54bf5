#!/bin/sh
# Installs what nectar needs when it is missing: Debian/Ubuntu packages
# through apt-get, Homebrew formulae on macOS. Nothing is downloaded when
# everything is already there.
#   scripts/install-deps.sh          the libraries nectar builds against
#   scripts/install-deps.sh --test   those, plus what the tests use so that
#                                    only hardware-gated tests skip: clang,
#                                    headless Chromium and jq (the chat page),
#                                    qemu-user and the aarch64 cross compiler
#                                    (the NEON kernels on x86-64), and the
#                                    `openai` client in a venv at build/venv
#                                    (the server test). `make check` runs this.
#   scripts/install-deps.sh fuzz     clang with its libFuzzer and sanitizer
#                                    runtimes (Debian ships them in
#                                    libclang-rt-*-dev, only recommended by
#                                    clang), for `make fuzz`; `fuzz-check`
#                                    only says whether they are there.
set -e
TEST=0
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
--test) TEST=1 ;;
"") ;;
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
*) echo "usage: scripts/install-deps.sh [--test | fuzz | fuzz-check]" >&2; exit 2 ;;
esac
OS=$(uname -s)
ARCH=$(uname -m)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

# Each need: a check that passes when it is there, and the package that
# provides it (Debian name, Homebrew name; "-" where that system needs none).
missing_deb="" missing_brew="" missing_what=""
need() { # what, check command, debian package(s), brew formula
    if ! sh -c "$2" >/dev/null 2>&1; then
        missing_what="$missing_what $1"
        [ "$3" != "-" ] && missing_deb="$missing_deb $3"
        [ "$4" != "-" ] && missing_brew="$missing_brew $4"
    fi
    return 0
}
need pkg-config "command -v pkg-config" pkg-config pkg-config
need make "command -v make" make -
need cc "command -v cc" gcc -
need pcre2 "pkg-config --exists libpcre2-8" libpcre2-dev pcre2
need utf8proc "pkg-config --exists libutf8proc" libutf8proc-dev utf8proc
need jansson "pkg-config --exists jansson" libjansson-dev jansson
need libmicrohttpd "pkg-config --exists libmicrohttpd" libmicrohttpd-dev libmicrohttpd
# a static link (pkg-config --static --libs nectar) of libmicrohttpd's TLS
# stack needs libunistring, whose -dev package nothing else pulls in
need libunistring "printf 'int main(void){return 0;}' | cc -x c - -lunistring -o /dev/null" \
    libunistring-dev libunistring
if [ $TEST = 1 ]; then
    need clang "command -v clang" clang -
    need jq "command -v jq" jq jq
    need chromium "command -v chromium || command -v chromium-browser || command -v google-chrome" \
        chromium chromium
    need python3-venv "python3 -c 'import venv, ensurepip'" "python3 python3-venv" python
    case "$OS/$ARCH" in
    Linux/x86_64 | Linux/amd64)
        need qemu-aarch64 "command -v qemu-aarch64" qemu-user -
        need aarch64-linux-gnu-gcc "command -v aarch64-linux-gnu-gcc" \
            "gcc-aarch64-linux-gnu libc6-dev-arm64-cross" -
        ;;
    esac
fi

if [ -n "$missing_what" ]; then
    echo "install-deps: missing:$missing_what"
    case "$OS" in
    Darwin)
        command -v brew >/dev/null 2>&1 || { echo "install-deps: install Homebrew first" >&2; exit 1; }
        for f in $missing_brew; do
            if [ "$f" = chromium ]; then brew install --cask chromium; else brew install "$f"; fi
        done
        ;;
    *)
        if command -v apt-get >/dev/null 2>&1; then
            $SUDO apt-get update -qq
            # shellcheck disable=SC2086
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing_deb
        else
            echo "install-deps: please install:$missing_what" >&2
            exit 1
        fi
        ;;
    esac
fi

# The Python the tests drive the server with: a venv under build/ (never the
# system's site-packages), holding only what the tests import.
if [ $TEST = 1 ]; then
    VENV=build/venv
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    if ! "$VENV/bin/python" -c "import openai" >/dev/null 2>&1; then
        echo "install-deps: pip install openai into $VENV"
        "$VENV/bin/python" -m pip install -q openai
    fi
fi
exit 0
