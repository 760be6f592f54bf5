#!/bin/sh
# `nectar tokenize` end to end: ids of a file's exact bytes equal HF's
# (fixtures from tools/make_tokenizer_fixtures.py), --decode gives the bytes
# back, and bad input is a one-line error with a non-zero exit and no output.
NECTAR=${NECTAR_BIN:-build/nectar}
FIX=tests/fixtures/tokenizer
QWEN3=tests/fixtures/qwen3-tokenizer
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# A folder holding only tokenizer.json is enough.
mkdir -p "$TMP/toks"
cp "$FIX/qwenstyle/tokenizer.json" "$TMP/toks/"

check_ids() { # name, model, expected-ids file
    if ! "$NECTAR" tokenize -m "$2" -f "$FIX/cli/input.txt" >"$TMP/ids" 2>"$TMP/err"; then
        fail "$1" "exit $? ($(cat "$TMP/err"))"
    elif cmp -s "$TMP/ids" "$3"; then pass "$1"
    else fail "$1" "ids differ from HF: $(head -c 200 "$TMP/ids")"; fi
}

check_decode() { # name, model, ids file
    if ! "$NECTAR" tokenize -m "$2" -f "$3" --decode >"$TMP/text" 2>"$TMP/err"; then
        fail "$1" "exit $? ($(cat "$TMP/err"))"
    elif cmp -s "$TMP/text" "$FIX/cli/input.txt"; then pass "$1"
    else fail "$1" "decoded text differs from the input file"; fi
}

check_ids tokenize_file_matches_hf_small_tokenizer "$TMP/toks" "$FIX/cli/ids_qwenstyle.txt"
check_decode tokenize_decode_gives_file_bytes_back_small "$TMP/toks" "$FIX/cli/ids_qwenstyle.txt"
check_ids tokenize_file_matches_hf_qwen3 "$QWEN3" "$FIX/cli/ids_qwen3.txt"
check_decode tokenize_decode_gives_file_bytes_back_qwen3 "$QWEN3" "$FIX/cli/ids_qwen3.txt"

# -p text gives the same ids as the file; --skip-special drops <|im_end|>.
out=$("$NECTAR" tokenize -m "$TMP/toks" -p "Hi<|im_end|>" 2>&1)
id=$("$NECTAR" tokenize -m "$TMP/toks" -p "<|im_end|>" 2>&1)
dec=$("$NECTAR" tokenize -m "$TMP/toks" -p "$out" --decode --skip-special 2>&1)
if [ "$id" = "2" ] && [ "${out% 2}" != "$out" ] && [ "$dec" = "Hi" ]; then pass tokenize_prompt_and_skip_special
else fail tokenize_prompt_and_skip_special "ids '$out', special '$id', decoded '$dec'"; fi

expect_error() { # name, pattern the message must contain, args...
    name=$1 pat=$2
    shift 2
    "$NECTAR" tokenize "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    lines=$(wc -l <"$TMP/err")
    if [ "$rc" -eq 0 ]; then fail "$name" "exit 0"
    elif [ -s "$TMP/out" ]; then fail "$name" "wrote to stdout"
    elif [ "$lines" -ne 1 ]; then fail "$name" "$lines lines on stderr"
    elif ! grep -q -- "$pat" "$TMP/err"; then fail "$name" "message: $(cat "$TMP/err")"
    else pass "$name"; fi
}

printf '{"model": {"vocab": ' >"$TMP/bad.json"
mkdir -p "$TMP/empty"
expect_error tokenize_missing_folder_is_an_error "no-such-dir" -m "$TMP/no-such-dir" -p x
expect_error tokenize_folder_without_tokenizer_is_an_error "no tokenizer.json" -m "$TMP/empty" -p x
expect_error tokenize_bad_json_is_an_error "bad.json:1:" -m "$TMP/bad.json" -p x
expect_error tokenize_missing_input_file_is_an_error "nope.txt" -m "$TMP/toks" -f "$TMP/nope.txt"
expect_error tokenize_decode_rejects_non_ids "'12x' is not a token id" -m "$TMP/toks" --decode -p "1 12x"
expect_error tokenize_decode_rejects_unknown_ids "not in the vocabulary" -m "$TMP/toks" --decode -p "99999"
expect_error tokenize_rejects_invalid_utf8 "not valid UTF-8" -m "$TMP/toks" -p "$(printf 'a\377b')"
expect_error tokenize_needs_a_model "--model DIR is required" -p x
