#!/bin/sh
# Installs the system libraries nectar builds against when they are missing:
# Debian/Ubuntu -dev packages through apt-get, Homebrew formulae on macOS.
# Nothing is downloaded when everything is already there.
set -e
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
