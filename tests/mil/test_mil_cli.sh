#!/bin/sh
# `nectar mil fmt/info/bundle` end to end. The weight file is the byte-exact
# 136-byte example of docs/references.md §M.3 (one fp16 [4] blob,
# values 1..4), written here with printf; the bundle must copy it unchanged,
# rewrite a relative @model_path/../ path and refuse bad input without
# leaving a partial folder.
. "$(dirname "$0")/../common/sh_test.sh"

mk_blob() {
    {
        printf '\001\000\000\000\002\000\000\000'; head -c 56 /dev/zero
        printf '\357\276\255\336\001\000\000\000\010\000\000\000\000\000\000\000\200\000\000\000\000\000\000\000'
        head -c 40 /dev/zero
        printf '\000\074\000\100\000\102\000\104'
    } >"$1"
}

mkdir -p "$TMP/src/deep" "$TMP/src/blobs"
mk_blob "$TMP/src/blobs/w.bin"
cat >"$TMP/src/deep/model.mil" <<'MIL'
program(1.3)
[buildInfo = dict<string, string>({})]
{
    func main<ios18>(tensor<fp16, [4]> x) {
            tensor<fp16, [4]> w = const()[name = string("w"), val = tensor<fp16, [4]>(BLOBFILE(path = string("@model_path/../blobs/w.bin"), offset = uint64(64)))];
            tensor<fp16, [4]> y = add(x = x, y = w)[name = string("y")];
        } -> (y);
}
MIL

if "$BIN" mil bundle "$TMP/src/deep/model.mil" -o "$TMP/out" >"$TMP/log" 2>&1 &&
    cmp -s "$TMP/src/blobs/w.bin" "$TMP/out/weights/weight.bin" &&
    grep -q 'BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64))' "$TMP/out/model.mil"; then
    pass bundle_copies_weights_and_rewrites_relative_paths
else fail bundle_copies_weights_and_rewrites_relative_paths "$(cat "$TMP/log")"; fi

if "$BIN" mil info "$TMP/out/model.mil" >"$TMP/info" 2>&1 &&
    grep -q 'fp16  *8 bytes in 1 blob' "$TMP/info" && grep -q 'ops: add 1, const 1' "$TMP/info" &&
    grep -q 'x  *tensor<fp16, \[4\]>' "$TMP/info"; then
    pass info_reports_io_histogram_and_weight_bytes
else fail info_reports_io_histogram_and_weight_bytes "$(cat "$TMP/info")"; fi

if "$BIN" mil bundle "$TMP/src/deep/model.mil" -o "$TMP/out" >/dev/null 2>"$TMP/err"; then
    fail bundle_refuses_existing_folder "exit 0"
elif grep -q "already exists" "$TMP/err"; then pass bundle_refuses_existing_folder
else fail bundle_refuses_existing_folder "$(cat "$TMP/err")"; fi

rm "$TMP/src/blobs/w.bin"
if "$BIN" mil bundle "$TMP/src/deep/model.mil" -o "$TMP/out2" >/dev/null 2>"$TMP/err"; then
    fail bundle_missing_weights_fails_cleanly "exit 0"
elif grep -q "w.bin: cannot open" "$TMP/err" && [ ! -e "$TMP/out2" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then
    pass bundle_missing_weights_fails_cleanly
else fail bundle_missing_weights_fails_cleanly "$(cat "$TMP/err"); out2 exists: $([ -e "$TMP/out2" ] && echo yes)"; fi

printf 'program(1.3)\n{\n    func main<ios18>(tensor<fp16, [4]> x) {\n        } -> (y);\n}\n' >"$TMP/bad.mil"
if "$BIN" mil fmt "$TMP/bad.mil" -o "$TMP/bad_out.mil" >/dev/null 2>"$TMP/err"; then
    fail fmt_reports_line_and_column "exit 0"
elif grep -q "bad.mil:4:15: unknown variable 'y'" "$TMP/err" && [ ! -e "$TMP/bad_out.mil" ]; then
    pass fmt_reports_line_and_column
else fail fmt_reports_line_and_column "$(cat "$TMP/err")"; fi

ok=1
for f in tests/fixtures/mil-corpus/*.mil; do
    "$BIN" mil fmt "$f" -o "$TMP/a.mil" 2>"$TMP/err" && "$BIN" mil fmt "$TMP/a.mil" >"$TMP/b.mil" 2>>"$TMP/err" &&
        cmp -s "$TMP/a.mil" "$TMP/b.mil" || { ok=0; echo "  $f: $(cat "$TMP/err")"; }
done
[ $ok = 1 ] && pass fmt_is_a_fixed_point_on_the_corpus || fail fmt_is_a_fixed_point_on_the_corpus "see above"

# --batch: one row per file (PASS / FAIL with the first reason), exit 1 unless all pass
printf 'program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 64, 1, 32]> x) {\n            tensor<fp16, [1, 64, 1, 32]> y = relu(x = x)[name = string("y")];\n        } -> (y);\n}\n' >"$TMP/good.mil"
printf 'program(1.3)\n{\n    func main<ios18>(tensor<fp32, [1, 10]> x) {\n            tensor<fp32, [1, 10]> y = relu(x = x)[name = string("y")];\n        } -> (y);\n}\n' >"$TMP/fp32.mil"
printf 'program(1.3)\n{ oops' >"$TMP/broken.mil"
"$BIN" mil bundle --batch "$TMP/good.mil" "$TMP/fp32.mil" "$TMP/broken.mil" >"$TMP/batch" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "^PASS .*good.mil" "$TMP/batch" && grep -q "^FAIL .*fp32.mil.*ane-fp16-compute" "$TMP/batch" &&
    grep -q "^FAIL .*broken.mil  parse: .*broken.mil:2:3: expected '}', found 'oops'" "$TMP/batch" &&
    grep -q "^1 of 3 files pass the ANE rules" "$TMP/batch"; then
    pass bundle_batch_sorts_files_by_ane_rules
else fail bundle_batch_sorts_files_by_ane_rules "rc=$rc $(cat "$TMP/batch")"; fi

"$BIN" mil frobnicate >/dev/null 2>&1
[ $? -eq 2 ] && pass unknown_mil_command_is_a_usage_error || fail unknown_mil_command_is_a_usage_error "exit not 2"
