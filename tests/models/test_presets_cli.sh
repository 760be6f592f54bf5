#!/bin/sh
# Every preset name (src/models/presets.c, listed by `gen-random --help`)
# works in every command that takes --like ($NECTAR_BIN): `bounds --like`
# reports it, and `gen-random --like --dry-run` plans it without writing. For
# Qwen3, Llama (bounds counts no q/k norms for it) and Qwen3.5 rows the planned
# bf16 bytes are 2 x the parameters bounds counts (two separate pieces of
# code: the writer's tensor list and bounds' formulas);
# the smallest preset is written for real and loaded by `nectar bench`.
# Every preset's random folder gets a tokenizer (the family's, or the small
# one for a toy vocabulary), and the tiny decoder and an encoder shape,
# written for real, run on text.
. "$(dirname "$0")/../common/sh_test.sh"

# the --like line of the help and its continuation lines, names separated by ", "
names=$("$BIN" gen-random --help | sed -n '/^ *--like NAME /,/^ *--dtype/p' | sed '$d; s/.*--like NAME//' |
    tr ',' '\n' | sed 's/^ *//; s/ *$//' | grep -v '^$')
n=$(echo "$names" | wc -l)
if [ "$n" -ge 10 ] && echo "$names" | grep -qx qwen3-8b && echo "$names" | grep -qx mmbert-base; then
    pass "presets_listed ($n)"
else fail presets_listed "got '$names'"; fi

for name in $names; do
    if ! "$BIN" bounds --like "$name" --json >"$TMP/b.json" 2>"$TMP/err"; then
        fail "bounds_like_$name" "$(cat "$TMP/err")"
        continue
    fi
    grep -q "\"source\": \"--like $name\"" "$TMP/b.json" && pass "bounds_like_$name" ||
        fail "bounds_like_$name" "$(head -3 "$TMP/b.json")"
    if ! "$BIN" gen-random --like "$name" "$TMP/out_$name" --dry-run >"$TMP/g.txt" 2>"$TMP/err" ||
        [ -e "$TMP/out_$name" ]; then
        fail "gen_random_like_$name" "$(cat "$TMP/err") (or it wrote $TMP/out_$name)"
        continue
    fi
    bytes=$(sed -n 's/.*, \([0-9]*\) bytes$/\1/p' "$TMP/g.txt")
    if grep -q "^would copy the tokenizer from .*-tokenizer$" "$TMP/g.txt"; then
        pass "gen_random_like_${name}_gets_a_tokenizer"
    else fail "gen_random_like_${name}_gets_a_tokenizer" "$(tail -1 "$TMP/g.txt")"; fi
    if grep -q '"arch": "qwen3"' "$TMP/b.json"; then
        total=$(sed -n 's/^ *"total": \([0-9]*\),*$/\1/p' "$TMP/b.json" | head -1)
        if [ -n "$bytes" ] && [ -n "$total" ] && [ "$bytes" -eq $((2 * total)) ]; then
            pass "gen_random_like_${name}_bytes_match_bounds"
        else
            fail "gen_random_like_${name}_bytes_match_bounds" "planned '$bytes' bytes, bounds total '$total' params"
        fi
    elif [ -n "$bytes" ] && [ "$bytes" -gt 0 ]; then
        pass "gen_random_like_$name"
    else fail "gen_random_like_$name" "$(cat "$TMP/g.txt")"; fi
done

# unknown names: one line listing the known ones, usage exit 2, nothing written
for cmd in "bounds --like" "gen-random $TMP/x --like"; do
    # shellcheck disable=SC2086
    "$BIN" $cmd qwen9-1b >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "'qwen9-1b' is not one of .*qwen3-0.6b" "$TMP/err" &&
        [ ! -e "$TMP/x" ]; then
        pass "unknown_like_refused_${cmd%% *}"
    else fail "unknown_like_refused_${cmd%% *}" "exit $rc: $(cat "$TMP/err")"; fi
done

# the smallest preset for real: a folder the engine loads
if "$BIN" gen-random --like tiny "$TMP/tiny" --seed 2 2>"$TMP/err" &&
    "$BIN" bench -m "$TMP/tiny" -p 8 -n 4 --runs 1 -t 1 >"$TMP/out" 2>&1; then
    pass gen_random_tiny_loads
else fail gen_random_tiny_loads "$(cat "$TMP/err" "$TMP/out" | tail -3)"; fi

# a random folder runs on text: the toy decoder (small tokenizer) and an
# encoder shape (encoder tokenizer), where before gen-random copied none
if "$BIN" run -m "$TMP/tiny" -p "hello there" -n 3 --temp 0 >"$TMP/out" 2>"$TMP/err"; then
    pass gen_random_tiny_runs_on_text
else fail gen_random_tiny_runs_on_text "$(tail -2 "$TMP/err")"; fi
if "$BIN" gen-random --like modernbert-base "$TMP/mb" 2>"$TMP/err" &&
    "$BIN" embed -m "$TMP/mb" -p "hello there" >"$TMP/out" 2>>"$TMP/err" && grep -q '[0-9]' "$TMP/out"; then
    pass gen_random_encoder_embeds_text
else fail gen_random_encoder_embeds_text "$(tail -2 "$TMP/err")"; fi
