#!/bin/sh
# The model folders `gen-random` writes appear whole or not at all
# (tools/nectar/cli_outdir.c; quantize's cases are in
# tests/quant/test_quantize_cli.sh): a folder or file at OUT that is not a
# model folder is refused and left as it was; an older model folder is
# replaced by the new one as a whole (no file of the old one survives);
# no temporary sibling is left behind.
BIN=${NECTAR_BIN:-build/nectar}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
no_tmp() { [ -z "$(ls -d "$T"/*.tmp.* 2>/dev/null)" ]; }

mkdir "$T/notes" && echo keep >"$T/notes/todo.txt"
"$BIN" gen-random --like tiny "$T/notes" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q "$T/notes: exists and is not a model folder" "$T/err" &&
    [ "$(ls "$T/notes")" = todo.txt ] && no_tmp; then
    pass gen_random_refuses_a_foreign_folder
else fail gen_random_refuses_a_foreign_folder "exit $rc: $(cat "$T/err")"; fi

echo x >"$T/file"
"$BIN" gen-random --like tiny "$T/file" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && [ "$(cat "$T/file")" = x ] && no_tmp; then pass gen_random_refuses_a_file
else fail gen_random_refuses_a_file "exit $rc: $(cat "$T/err")"; fi

# an older model folder (another tokenizer, a stray file) replaced whole:
# the stray file gone, the tokenizer and weights new
if "$BIN" gen-random --like tiny "$T/m" --tokenizer tests/fixtures/qwen3/tiny_bf16 >/dev/null 2>&1 &&
    cp "$T/m/model.safetensors" "$T/old.safetensors" && echo x >"$T/m/stray.txt" &&
    "$BIN" gen-random --like tiny "$T/m" --seed 2 >/dev/null 2>"$T/err" &&
    [ ! -e "$T/m/stray.txt" ] && [ -f "$T/m/config.json" ] &&
    cmp -s "$T/m/tokenizer.json" tests/fixtures/small-tokenizer/tokenizer.json &&
    ! cmp -s "$T/m/model.safetensors" "$T/old.safetensors" && no_tmp; then
    pass gen_random_replaces_an_older_model_whole
else fail gen_random_replaces_an_older_model_whole "$(cat "$T/err"; ls "$T" "$T/m")"; fi

mkdir "$T/empty"
if "$BIN" gen-random --like tiny "$T/empty" >/dev/null 2>"$T/err" && [ -f "$T/empty/config.json" ] && no_tmp; then
    pass gen_random_fills_an_empty_folder
else fail gen_random_fills_an_empty_folder "$(cat "$T/err")"; fi
