#!/bin/sh
# The kernels chosen by measurement (cpu_wisdom.h) apply to every command
# that opens a CPU model, not only bench: `nectar run` and `nectar chat`
# with NECTAR_WISDOM naming a fresh file measure once and write it (a line
# per slot under this CPU's key), a second run reads it back (NECTAR_LOG=
# debug names every slot "from the wisdom file", and the file is left as
# it was), and the greedy text on bf16 and q8 weights equals the default
# kernels' (NECTAR_WISDOM=off). On a CPU with one candidate per slot there
# is nothing to measure or write: the output check still runs.
BIN=${NECTAR_BIN:-build/nectar}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
M=tests/fixtures/qwen3/tiny_bf16
W="$TMP/cache/nectar/wisdom"

if ! "$BIN" quantize -m "$M" --type q8 -o "$TMP/q8" >/dev/null 2>"$TMP/err"; then
    fail wisdom_q8_fixture "$(cat "$TMP/err")"
    exit 0
fi
for m in bf16 q8; do
    dir=$M
    [ $m = q8 ] && dir="$TMP/q8"
    rm -rf "$TMP/cache"
    run() { "$BIN" run -t 2 -m "$dir" -p "In the beginning" --temp 0 -n 24; }
    NECTAR_WISDOM=off run >"$TMP/off.txt" 2>"$TMP/err0"
    NECTAR_LOG=debug NECTAR_WISDOM="$W" run >"$TMP/w1.txt" 2>"$TMP/err1"
    cp "$W" "$TMP/after1" 2>/dev/null
    NECTAR_LOG=debug NECTAR_WISDOM="$W" run >"$TMP/w2.txt" 2>"$TMP/err2"
    if ! grep -q "measured now" "$TMP/err1"; then
        # nothing to choose on this CPU: no file, the defaults
        if [ ! -e "$W" ] && cmp -s "$TMP/off.txt" "$TMP/w1.txt"; then
            echo "SKIP wisdom_run_writes_then_reads_$m: one candidate per slot on this CPU"
        else
            fail "wisdom_run_writes_then_reads_$m" "$(cat "$TMP/err1")"
        fi
        continue
    fi
    key=$(sed -n 2p "$W" | cut -f1)
    if head -1 "$W" | grep -q '^# nectar kernel wisdom 3$' && [ -n "$key" ] &&
        grep -q "	decode-q8	" "$W" && grep -q "	decode-bf16-accurate	" "$W" &&
        ! grep -q "measured now" "$TMP/err2" && grep -q "decode-q8 [a-z0-9-]* (from the wisdom file)" "$TMP/err2" &&
        cmp -s "$W" "$TMP/after1"; then
        pass "wisdom_run_writes_then_reads_$m"
    else
        fail "wisdom_run_writes_then_reads_$m" "$(cat "$TMP/err1" "$TMP/err2" "$W" | head -12)"
    fi
    if [ -s "$TMP/off.txt" ] && cmp -s "$TMP/off.txt" "$TMP/w1.txt" && cmp -s "$TMP/off.txt" "$TMP/w2.txt"; then
        pass "wisdom_run_greedy_equals_the_default_kernels_$m"
    else
        fail "wisdom_run_greedy_equals_the_default_kernels_$m" "off '$(cat "$TMP/off.txt")' wisdom '$(cat "$TMP/w1.txt")' '$(cat "$TMP/w2.txt")' $(cat "$TMP/err0")"
    fi
done

# chat reads the file run wrote (one turn on stdin, greedy)
if [ -e "$W" ]; then
    cp "$W" "$TMP/before"
    if printf 'Hello\n' | NECTAR_LOG=debug NECTAR_WISDOM="$W" "$BIN" chat -t 2 -m "$TMP/q8" --temp 0 -n 8 \
        >"$TMP/chat.txt" 2>"$TMP/errc" && grep -q "(from the wisdom file)" "$TMP/errc" &&
        ! grep -q "measured now" "$TMP/errc" && cmp -s "$W" "$TMP/before"; then
        pass wisdom_chat_reads_the_file
    else
        fail wisdom_chat_reads_the_file "$(cat "$TMP/errc" | head -5)"
    fi
fi
