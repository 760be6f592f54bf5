#!/bin/sh
# The kernels chosen by measurement (cpu_wisdom.h) apply to every command
# that opens a CPU model, not only bench: `nectar run` and `nectar chat`
# with NECTAR_WISDOM naming a fresh file measure once and write it (a line
# per slot under this CPU's key), a second run reads it back (NECTAR_LOG=
# debug names every slot "from the wisdom file", and the file is left as
# it was), and the greedy text on bf16 and q8 weights equals the default
# kernels' (NECTAR_WISDOM=off). On a CPU with one candidate per slot there
# is nothing to measure or write: the output check still runs.
. "$(dirname "$0")/../common/sh_test.sh"
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
    if head -1 "$W" | grep -q '^# nectar kernel wisdom 7$' && [ -n "$key" ] &&
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

# encoder commands tune no decoder slots: embed and classify on a fresh
# NECTAR_WISDOM neither measure nor write it (they used to, ~1 s on a
# machine's first use), while run on a decoder does (where the CPU has a
# choice to make: "measured now")
E="$TMP/enc/nectar/wisdom"
NECTAR_LOG=debug NECTAR_WISDOM="$E" "$BIN" embed -t 2 -m tests/fixtures/modernbert/mb_base -p "hello world" \
    >"$TMP/emb.txt" 2>"$TMP/erre"
rce=$?
NECTAR_LOG=debug NECTAR_WISDOM="$E" "$BIN" classify -t 2 -m tests/fixtures/modernbert/mm_cls -p "hello world" \
    >"$TMP/cls.txt" 2>"$TMP/errk"
rck=$?
if [ $rce = 0 ] && [ $rck = 0 ] && [ -s "$TMP/emb.txt" ] && [ -s "$TMP/cls.txt" ] && [ ! -e "$E" ] &&
    ! grep -q "measured now\|kernels (wisdom" "$TMP/erre" "$TMP/errk"; then
    pass wisdom_encoder_commands_measure_nothing
else
    fail wisdom_encoder_commands_measure_nothing "exit $rce/$rck, $(ls "$TMP/enc/nectar" 2>&1) $(cat "$TMP/erre" "$TMP/errk" | head -4)"
fi
NECTAR_LOG=debug NECTAR_WISDOM="$E" "$BIN" run -t 2 -m "$M" -p "In the beginning" --temp 0 -n 4 >/dev/null 2>"$TMP/errr"
if ! grep -q "measured now" "$TMP/errr"; then
    echo "SKIP wisdom_decoder_after_encoder_measures: one candidate per slot on this CPU"
elif [ -s "$E" ]; then
    pass wisdom_decoder_after_encoder_measures
else
    fail wisdom_decoder_after_encoder_measures "$(head -3 "$TMP/errr")"
fi

# a NECTAR_WISDOM path too long to keep (1023 characters fit) stops the
# command in one line naming the variable, exit 2, no output; it used to run
# with no wisdom, unnoticed
long=$(printf '%1100s' '' | tr ' ' w)
NECTAR_WISDOM="/$long" "$BIN" run -t 2 -m "$M" -p "In the beginning" --temp 0 -n 4 >"$TMP/long.txt" 2>"$TMP/errl"
rc=$?
if [ $rc = 2 ] && [ ! -s "$TMP/long.txt" ] && [ "$(wc -l <"$TMP/errl")" = 1 ] &&
    grep -q '^nectar: NECTAR_WISDOM: .* 1101 characters' "$TMP/errl"; then
    pass wisdom_path_too_long_is_one_line
else
    fail wisdom_path_too_long_is_one_line "exit $rc: $(cat "$TMP/errl" "$TMP/long.txt" | head -3)"
fi
