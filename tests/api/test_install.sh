#!/bin/sh
# `make install` into temporary prefixes, then the examples built and run
# against the installed copy only, as a user of the library would:
# `pkg-config --cflags --libs nectar` and nothing from the source tree.
# Checks: the PKG_CONFIG_PATH hint for a prefix pkg-config does not search,
# the rpath in the .pc's libs (no LD_LIBRARY_PATH needed), --static listing
# every dependency's libraries (libunistring too: a static libnectar links
# with that list alone), DESTDIR staging, the soname, that the shared library exports
# only nc_* symbols, the embeddings example against HF's numbers
# (tests/fixtures/modernbert, tools/make_modernbert_fixtures.py), the
# generation example against HF's greedy ids (tests/fixtures/qwen3), the
# installed nectar finding its data, and `make uninstall` leaving nothing.
# The library installed is the regular build (build/), also under ASan.
T=$(mktemp -d "${TMPDIR:-/tmp}/nc_install.XXXXXX")
trap 'rm -rf "$T"' EXIT
ROOT=$(pwd)
P=$T/prefix
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory BUILD=build "$@"; }

if ! (unset PKG_CONFIG_PATH; mk install PREFIX="$P") >"$T/log" 2>&1; then
    fail install "$(tail -5 "$T/log")"
    exit 1
fi
# a prefix pkg-config does not search: the install says how to add it
if grep -q "export PKG_CONFIG_PATH=$P/lib/pkgconfig" "$T/log"; then
    pass install_says_how_pkg_config_finds_it
else fail install_says_how_pkg_config_finds_it "$(cat "$T/log")"; fi
case $(uname -s) in
Darwin) so=$P/lib/libnectar.0.dylib LIBVAR=DYLD_LIBRARY_PATH ;;
*) so=$P/lib/libnectar.so.0 LIBVAR=LD_LIBRARY_PATH ;;
esac
missing=""
for f in bin/nectar include/nectar.h lib/libnectar.a lib/pkgconfig/nectar.pc \
    share/nectar/qwen3-tokenizer/tokenizer.json share/nectar/qwen3-tokenizer/tokenizer_config.json; do
    [ -f "$P/$f" ] || missing="$missing $f"
done
[ -f "$so" ] || missing="$missing $so"
[ -z "$missing" ] && pass install_puts_every_file || fail install_puts_every_file "missing:$missing"

if [ "$(uname -s)" = Darwin ]; then
    others=$(nm -gU "$so" | awk '{print $3}' | grep -v '^_nc_')
    soname=$(otool -D "$so" | tail -1)
else
    others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^nc_')
    soname=$(objdump -p "$so" | awk '/SONAME/ {print $2}')
fi
n_api=$(nm -D --defined-only "$so" 2>/dev/null | grep -c ' nc_')
if [ -z "$others" ] && [ "$n_api" -ge 20 ]; then pass shared_library_exports_only_nc_symbols
else fail shared_library_exports_only_nc_symbols "$n_api nc_ symbols; others: $(echo $others | head -c 300)"; fi
case $soname in
*libnectar.so.0 | *libnectar.0.dylib) pass soname_has_the_major_version ;;
*) fail soname_has_the_major_version "'$soname'" ;;
esac

# DESTDIR stages the same tree under another root, naming PREFIX inside
if mk install PREFIX=/opt/nectar DESTDIR="$T/stage" >"$T/log" 2>&1 &&
    [ -f "$T/stage/opt/nectar/include/nectar.h" ] &&
    grep -q '^prefix=/opt/nectar$' "$T/stage/opt/nectar/lib/pkgconfig/nectar.pc"; then
    pass install_honours_destdir
else fail install_honours_destdir "$(tail -3 "$T/log")"; fi

# The examples, from a copy outside the tree, with pkg-config only.
mkdir -p "$T/user"
cp examples/embed.c examples/generate.c "$T/user/"
cd "$T/user" || exit 1
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
built=1
for ex in embed generate; do
    # shellcheck disable=SC2046
    if ! cc -std=c11 -Wall -Wextra -Werror -o $ex $ex.c $(pkg-config --cflags --libs nectar) \
        2>"$T/cc.err"; then
        fail "example_${ex}_builds" "$(head -5 "$T/cc.err")"; built=0
    fi
done
[ $built = 1 ] && pass examples_build_with_pkg_config_only
# the libs carry an rpath, so the example runs without LD_LIBRARY_PATH
if env -u LD_LIBRARY_PATH -u DYLD_LIBRARY_PATH ./embed "$ROOT/tests/fixtures/modernbert/mb_base" Hello \
    >/dev/null 2>"$T/err"; then
    pass example_runs_without_library_path
else fail example_runs_without_library_path "$(cat "$T/err")"; fi
# --static lists every library the dependencies' own .pc files need
want_static=$(pkg-config --static --libs libpcre2-8 libutf8proc jansson libmicrohttpd)
got_static=" $(pkg-config --static --libs nectar) "
missing_static=""
for l in $want_static; do
    case "$got_static" in *" $l "*) ;; *) missing_static="$missing_static $l" ;; esac
done
[ -z "$missing_static" ] && pass pkg_config_static_lists_every_library ||
    fail pkg_config_static_lists_every_library "missing:$missing_static"
# a static libnectar (GNU ld: -l:libnectar.a) links with --static's list
# alone and needs no libnectar.so; libmicrohttpd's TLS stack needs
# libunistring there, which the .pc names itself (Libs.private)
if [ "$(uname -s)" = Linux ]; then
    static_libs=$(pkg-config --static --libs nectar | sed 's/-lnectar /-l:libnectar.a /')
    if pkg-config --static --libs libmicrohttpd | grep -q -e -lgnutls -e -lidn2 &&
        ! pkg-config --libs --static nectar | grep -q -e '-lunistring'; then
        fail pkg_config_static_names_libunistring "$(pkg-config --static --libs nectar)"
    # shellcheck disable=SC2086
    elif cc -std=c11 -o gen_static generate.c $(pkg-config --cflags nectar) $static_libs \
        2>"$T/cc.err" && ! (ldd ./gen_static | grep -q libnectar) &&
        env -u LD_LIBRARY_PATH ./gen_static --ids "$ROOT/tests/fixtures/qwen3/tiny_gqa2" Hello 2 \
            >/dev/null 2>"$T/err"; then
        pass example_links_statically_with_pkg_config_static
    else fail example_links_statically_with_pkg_config_static "$(head -3 "$T/cc.err" "$T/err")"; fi
fi
run() { env "$LIBVAR=$P/lib" "$@"; }

# embed: CLS pooling of "Hello", normalised, against HF (rows 129..192)
if run ./embed "$ROOT/tests/fixtures/modernbert/mb_base" Hello >"$T/emb" 2>"$T/err"; then
    sed -n '129,192p' "$ROOT/tests/fixtures/modernbert/mb_base/ref/embed_cls_norm.txt" >"$T/want"
    if awk 'NR == FNR { v[FNR] = $1; s += $1 * $1; next }
            { d = v[FNR] / sqrt(s) - $1; if (d < 0) d = -d; if (d > 1e-4) bad = 1; n++ }
            END { exit bad || n != 64 }' "$T/emb" "$T/want"; then
        pass example_embed_matches_hf
    else fail example_embed_matches_hf "$(head -3 "$T/emb")"; fi
else fail example_embed_matches_hf "$(cat "$T/err")"; fi

# generate: greedy continuation of the first prompt of tiny_gqa2, as ids,
# against HF's greedy ids (up to the first end-of-sequence id)
REF=$ROOT/tests/fixtures/qwen3/tiny_gqa2
if run ./generate --ids "$REF" "$(jq -r '.prompts[0].text' "$REF/reference.json")" 16 \
    >"$T/gen" 2>"$T/err"; then
    jq -r '.prompts[0].greedy_ids[:16][]' "$REF/reference.json" | tr '\n' ' ' >"$T/want"
    got=$(tr '\n' ' ' <"$T/gen")
    want=$(cat "$T/want")
    case "$want" in
    "$got"*) [ -n "$got" ] && pass example_generate_matches_hf_greedy ||
        fail example_generate_matches_hf_greedy "no tokens" ;;
    *) fail example_generate_matches_hf_greedy "got '$got', HF '$want'" ;;
    esac
else fail example_generate_matches_hf_greedy "$(cat "$T/err")"; fi
cd "$ROOT" || exit 1

# the installed nectar finds the Qwen3 tokenizer it copies into random
# folders beside itself, from any working folder
if (cd "$T" && "$P/bin/nectar" gen-random --like qwen3-0.6b --dry-run "$T/rnd" >"$T/dry" 2>&1) &&
    grep -q "tokenizer from $P/bin/../share/nectar/qwen3-tokenizer$" "$T/dry"; then
    pass installed_nectar_finds_its_data
else fail installed_nectar_finds_its_data "$(cat "$T/dry")"; fi

if mk uninstall PREFIX="$P" >"$T/log" 2>&1 && [ -z "$(find "$P" -type f -o -type l)" ]; then
    pass uninstall_removes_every_file
else fail uninstall_removes_every_file "left: $(find "$P" -type f -o -type l | head -5)"; fi
