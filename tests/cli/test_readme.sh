#!/bin/sh
# Every command in README.md's ```sh blocks, run as written on this build:
# a README line that fails is a failing test. What changes, listed here and
# nowhere else:
#   - substitutions: build/nectar -> $NECTAR_BIN; /tmp/ and $HOME/.local ->
#     a temporary folder; --port 8080 -> --port 0 (a free port); the
#     placeholder DIR of `quantize -m DIR ... -o DIR-q8` -> models/demo and
#     a temporary output; `-o generate` / `./generate` -> the temporary
#     folder;
#   - how a line runs: `serve` in the background until it answers /health,
#     then SIGTERM (exit 0); `chat` with an empty stdin (Ctrl-D);
#   - SKIP: the lines in the table below (network, a downloaded model, or
#     the build and test run this test is part of), each with its reason;
#   - every other line that fails is a FAIL.
BIN=${NECTAR_BIN:-build/nectar}
README=${README:-README.md}
T=$(mktemp -d "${TMPDIR:-/tmp}/nc_readme.XXXXXX")
trap 'rm -rf "$T"' EXIT
if [ ! -x "$BIN" ]; then echo "SKIP readme: $BIN not built"; exit 0; fi

# "line as written (comment removed)|reason"
SKIPS='make demo|installs system packages and rebuilds the tree this test runs from
make check|is the test run this test is part of
pip install -U huggingface_hub|network
hf download Qwen/Qwen3-0.6B --local-dir ~/models/Qwen3-0.6B|network
hf download Qwen/Qwen3-0.6B|network
build/nectar chat -m ~/models/Qwen3-0.6B|needs the downloaded model
build/nectar chat -m Qwen/Qwen3-0.6B|needs the downloaded model'

# The sh blocks' lines: "LINENO<TAB>command" without comments or blanks.
awk '/^```sh$/ { inb = 1; next } /^```/ { inb = 0; next }
     inb { l = $0; sub(/[ \t]+#.*$/, "", l); sub(/^#.*$/, "", l); sub(/[ \t]+$/, "", l);
           if (l != "") printf "%d\t%s\n", NR, l }' "$README" >"$T/lines"
if [ ! -s "$T/lines" ]; then echo "FAIL readme: no sh blocks found in $README"; exit 1; fi

mk_env() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$@"; }
ROOT=$(pwd)
vars="" # assignments (B=...) so far, replayed before each line
rc=0
while IFS="$(printf '\t')" read -r n line; do
    reason=$(printf '%s\n' "$SKIPS" | awk -F'|' -v l="$line" '$1 == l { print $2 }')
    if [ -n "$reason" ]; then echo "SKIP readme_L$n: $line: $reason"; continue; fi
    cmd=$(printf '%s\n' "$line" | sed \
        -e "s|build/nectar|$BIN|g" -e "s|/tmp/|$T/|g" -e "s|\\\$HOME/\\.local|$T/prefix|g" \
        -e 's|--port 8080|--port 0|g' -e 's|-m DIR |-m models/demo |g' -e "s|-o DIR-q8|-o $T/demo-q8|g" \
        -e "s|-o generate|-o $T/generate|g" -e "s|\\./generate|$T/generate|g")
    case "$cmd" in
    *=*) case "${cmd%%=*}" in *[!A-Za-z0-9_]*) ;; *) vars="$vars$cmd; "; continue ;; esac ;;
    esac
    case "$cmd" in
    export\ *) vars="$vars$cmd; "; continue ;;
    *" serve "*)
        (cd "$ROOT" && eval "${vars}exec $cmd" >"$T/serve.out" 2>"$T/serve.err") &
        spid=$!
        port=""
        i=0
        while [ $i -lt 150 ] && [ -z "$port" ]; do
            port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$T/serve.out")
            [ -z "$port" ] && sleep 0.1
            i=$((i + 1))
        done
        health=$( [ -n "$port" ] && curl -s "http://127.0.0.1:$port/health")
        kill "$spid" 2>/dev/null
        wait "$spid"
        src=$?
        if [ "$health" = '{"status":"ok"}' ] && [ $src -eq 0 ]; then echo "PASS readme_L$n: $line"
        else echo "FAIL readme_L$n: $line: health '$health', exit $src: $(tail -3 "$T/serve.err")"; rc=1; fi
        continue ;;
    esac
    # stdin empty: chat reads Ctrl-D and ends
    (cd "$ROOT" && mk_env sh -c "$vars$cmd" </dev/null >"$T/out" 2>"$T/err")
    src=$?
    if [ $src -eq 0 ]; then echo "PASS readme_L$n: $line"
    else echo "FAIL readme_L$n: $line: exit $src: $(tail -3 "$T/err")"; rc=1; fi
done <"$T/lines"
exit $rc
