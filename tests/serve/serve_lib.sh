# Shared by the serve shell tests (sourced, not run): start `$NECTAR_BIN
# serve` with the fake engine on a free loopback port and stop it cleanly.
# After serve_start NAME ARGS...: $PID, $PORT and $TMP (removed on exit);
# on failure it prints "FAIL NAME: ..." and exits 1. $SERVE_FIXTURE names
# another fake-engine folder than tests/fixtures/serve/fake.
BIN=${NECTAR_BIN:-build/nectar}
serve_start() { # test name, extra serve arguments...
    name=$1
    shift
    serve_launch "$name" --fake-engine -m "${SERVE_FIXTURE:-tests/fixtures/serve/fake}" "$@"
}

# The same with any serve arguments (real models: serve_launch NAME -m DIR ...).
serve_launch() { # test name, serve arguments...
    name=$1
    shift
    # a second server of the same test keeps the first one's folder
    [ -n "$SERVE_TMP_MADE" ] || { TMP=$(mktemp -d); SERVE_TMP_MADE=1; }
    rm -f "$TMP/out" # an earlier server's line must not be read as this one's
    "$BIN" serve --port 0 "$@" >"$TMP/out" 2>"$TMP/err" &
    PID=$!
    trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
    PORT=""
    i=0
    while [ $i -lt 100 ] && [ -z "$PORT" ]; do
        PORT=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$TMP/out" 2>/dev/null)
        [ -z "$PORT" ] && sleep 0.1
        i=$((i + 1))
    done
    if [ -z "$PORT" ]; then
        echo "FAIL $name: server did not start: $(cat "$TMP/err")"
        exit 1
    fi
}

# SIGTERM, then the exit status must be 0 (under ASan: no leak either).
serve_stop() { # test name
    kill $PID
    wait $PID
    src=$?
    trap 'rm -rf "$TMP"' EXIT
    if [ $src -eq 0 ]; then echo "PASS $1"
    else echo "FAIL $1: exit status $src: $(tail -5 "$TMP/err")"; return 1; fi
}
