#!/bin/sh
# `nectar mil check` end to end: a clean program exits 0 silently, problems
# print "file:line: severity: message [rule]" and exit 1, warnings alone exit
# 0, --skip leaves a rule out, a folder of files is checked file by file, and
# a parse error is reported with its position.
NECTAR=${NECTAR_BIN:-build/nectar}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

prog() { # file, params, body, outputs
    printf 'program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n    func main<ios18>(%s) {\n%s\n    } -> (%s);\n}\n' \
        "$2" "$3" "$4" >"$1"
}
# clean: a matmul anchors it (an elementwise-only function is a warning)
prog "$TMP/clean.mil" "tensor<fp16, [1, 64]> x, tensor<fp16, [64, 64]> w" \
    '        bool f = const()[name = string("f"), val = bool(false)];
        tensor<fp16, [1, 64]> m = matmul(transpose_x = f, transpose_y = f, x = x, y = w)[name = string("m")];
        tensor<fp16, [1, 64]> y = relu(x = m)[name = string("r")];' y
prog "$TMP/narrow.mil" "tensor<fp16, [1, 16]> x" \
    '        tensor<fp16, [1, 16]> y = relu(x = x)[name = string("r")];' y
prog "$TMP/gelu.mil" "tensor<fp16, [1, 64]> x" \
    '        tensor<fp16, [1, 64]> y = gelu(x = x)[name = string("g")];' y
prog "$TMP/badarg.mil" "tensor<fp16, [1, 64]> x" \
    '        tensor<fp16, [1, 64]> y = relu(x = x, z = x)[name = string("r")];' y
printf 'program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1]> x) {\n        tensor<fp16, [1]> y = relu(x = x\n' >"$TMP/broken.mil"

if "$NECTAR" mil check "$TMP/clean.mil" --target ane >"$TMP/out" 2>&1 && [ ! -s "$TMP/out" ]; then
    pass mil_check_clean_program_is_silent
else fail mil_check_clean_program_is_silent "$(cat "$TMP/out")"; fi

if "$NECTAR" mil check "$TMP/narrow.mil" --target ane >"$TMP/out" 2>&1; then
    fail mil_check_ane_error_exits_1 "exit 0"
elif grep -q "narrow.mil:4: error: input 'x' has last axis 16.*\[ane-io-width\]" "$TMP/out"; then
    pass mil_check_ane_error_exits_1
else fail mil_check_ane_error_exits_1 "$(cat "$TMP/out")"; fi

if "$NECTAR" mil check "$TMP/narrow.mil" >"$TMP/out" 2>&1 && [ ! -s "$TMP/out" ]; then
    pass mil_check_ane_rules_only_with_target
else fail mil_check_ane_rules_only_with_target "$(cat "$TMP/out")"; fi

if "$NECTAR" mil check "$TMP/gelu.mil" --target ane >"$TMP/out" 2>&1 &&
    grep -q "gelu.mil:5: warning: .*tanh.*\[ane-gelu\]" "$TMP/out"; then
    pass mil_check_warning_alone_exits_0
else fail mil_check_warning_alone_exits_0 "$(cat "$TMP/out")"; fi

if "$NECTAR" mil check "$TMP/gelu.mil" --target ane --skip ane-exp,ane-gelu,ane-elementwise-only >"$TMP/out" 2>&1 &&
    [ ! -s "$TMP/out" ]; then
    pass mil_check_skip_leaves_rule_out
else fail mil_check_skip_leaves_rule_out "$(cat "$TMP/out")"; fi

if "$NECTAR" mil check "$TMP/badarg.mil" >"$TMP/out" 2>&1; then fail mil_check_generic_error "exit 0"
elif grep -q "badarg.mil:5: error: .*'z'" "$TMP/out"; then pass mil_check_generic_error
else fail mil_check_generic_error "$(cat "$TMP/out")"; fi

if "$NECTAR" mil check "$TMP/broken.mil" >"$TMP/out" 2>&1; then fail mil_check_parse_error "exit 0"
elif grep -q "broken.mil:[0-9]*:[0-9]*: error: expected .*\[parse\]" "$TMP/out"; then pass mil_check_parse_error
else fail mil_check_parse_error "$(cat "$TMP/out")"; fi

# a folder: every .mil in it, and a summary line
if "$NECTAR" mil check "$TMP" --target ane >"$TMP/out" 2>&1; then fail mil_check_folder "exit 0"
elif grep -q "^5 files checked: 3 with errors" "$TMP/out"; then pass mil_check_folder
else fail mil_check_folder "$(cat "$TMP/out")"; fi

if "$NECTAR" mil check --list-rules | grep -q "^ane-conv-kernel-width"; then pass mil_check_lists_rules
else fail mil_check_lists_rules "no rule table"; fi

# a probe profile settles a chip-dependent rule: the elementwise-only
# warning becomes an error where the probe case failed, and goes where it passed
printf '{"cases": [{"id": "elementwise_only", "status": "compile failed"}]}' >"$TMP/bad.json"
printf '{"cases": [{"id": "elementwise_only", "status": "ok"}]}' >"$TMP/good.json"
"$NECTAR" mil check "$TMP/gelu.mil" --target ane --skip ane-gelu --ane-profile "$TMP/good.json" >"$TMP/out1" 2>&1
r1=$?
"$NECTAR" mil check "$TMP/gelu.mil" --target ane --skip ane-gelu --ane-profile "$TMP/bad.json" >"$TMP/out2" 2>&1
r2=$?
if [ $r1 = 0 ] && [ ! -s "$TMP/out1" ] && [ $r2 = 1 ] &&
    grep -q "gelu.mil:4: error: function 'main' is elementwise only.*\[ane-elementwise-only\]" "$TMP/out2"; then
    pass mil_check_ane_profile_settles_rules
else fail mil_check_ane_profile_settles_rules "$r1 $r2 $(cat "$TMP/out1" "$TMP/out2")"; fi
if "$NECTAR" mil check "$TMP/gelu.mil" --target ane --ane-profile "$TMP/none.json" >"$TMP/out" 2>&1; then
    fail mil_check_missing_profile "exit 0"
elif grep -q "none.json" "$TMP/out" && [ "$(wc -l <"$TMP/out")" -eq 1 ]; then pass mil_check_missing_profile
else fail mil_check_missing_profile "$(cat "$TMP/out")"; fi
