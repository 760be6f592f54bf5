#!/bin/sh
# Compile-only check of the macOS ANE bridge on any machine: every
# src/ane/*.c is compiled with -fsyntax-only by gcc and clang (each when
# installed), src/ane/*.m by clang as Objective-C, under the project's warning flags, against
# tests/ane/darwin_decls/ -- declarations of the public Objective-C runtime,
# CoreFoundation and IOSurface functions only (see its README.md). A
# negative control (a wrong IOSurfaceLock call) must be rejected, which
# shows the declarations are the ones in use. The macOS branch of
# tests/ane/test_ane_runner.c (the opt-in device test) is checked the same
# way. Nothing is linked or run.
cd "$(dirname "$0")/../.." || exit 1
decls=tests/ane/darwin_decls
pkg=$(pkg-config --cflags jansson 2>/dev/null)
flags="-std=c11 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -Isrc -I$decls $pkg \
 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -D_DARWIN_C_SOURCE"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/bad.c" <<'C'
#include <IOSurface/IOSurface.h>
int f(IOSurfaceRef s) { return IOSurfaceLock(s, 0); }
C
ran=0
for cc in gcc clang; do
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "SKIP ane_syntax_$cc: $cc is not installed"
        continue
    fi
    ran=1
    ok=1
    # twice: as on this machine, and with __arm64__ defined, which only
    # selects the arm64 BOOL (C bool) in src/ane/ane_objc.h, the ABI of the
    # machines that have an ANE (glibc does not read that Apple macro)
    for arch in "" "-D__arm64__=1"; do
        for f in src/ane/*.c; do
            # shellcheck disable=SC2086
            if ! "$cc" -fsyntax-only $flags $arch "$f" >"$tmp/out" 2>&1; then
                ok=0
                cat "$tmp/out"
                echo "FAIL ane_syntax_$cc: $f $arch"
            fi
        done
    done
    # the Objective-C file (clang only: gcc needs its separate cc1obj)
    for f in src/ane/*.m; do
        [ "$cc" = clang ] || break
        # shellcheck disable=SC2086
        if ! "$cc" -fsyntax-only $flags -x objective-c -fobjc-exceptions "$f" >"$tmp/out" 2>&1; then
            ok=0
            cat "$tmp/out"
            echo "FAIL ane_syntax_$cc: $f"
        fi
    done
    # the macOS branches of portable files (__APPLE__ defined): the per-user
    # cache dir of ane_stage.c, the chip/OS names and real device of cmd_ane.c
    for f in src/ane_host/ane_stage.c tools/nectar/cmd_ane.c; do
        # shellcheck disable=SC2086
        if ! "$cc" -fsyntax-only $flags -Itools/nectar -D__APPLE__ -include "$decls/darwin_unistd.h" \
            "$f" >"$tmp/out" 2>&1; then
            ok=0
            cat "$tmp/out"
            echo "FAIL ane_syntax_$cc: $f (__APPLE__)"
        fi
    done
    # the device test's macOS branch too
    # shellcheck disable=SC2086
    if ! "$cc" -fsyntax-only $flags -DNECTAR_ANE_SYNTAX_CHECK tests/ane/test_ane_runner.c >"$tmp/out" 2>&1; then
        ok=0
        cat "$tmp/out"
        echo "FAIL ane_syntax_$cc: tests/ane/test_ane_runner.c (NECTAR_ANE_SYNTAX_CHECK)"
    fi
    [ "$ok" = 1 ] && echo "PASS ane_syntax_$cc ($(ls src/ane/*.c src/ane/*.m | wc -l) files and the device test)"
    # shellcheck disable=SC2086
    if "$cc" -fsyntax-only $flags "$tmp/bad.c" >/dev/null 2>&1; then
        echo "FAIL ane_syntax_negative_control_$cc: a wrong IOSurfaceLock call compiled"
    else
        echo "PASS ane_syntax_negative_control_$cc"
    fi
done
[ "$ran" = 1 ] || echo "SKIP ane_syntax: no C compiler found"
