#!/bin/sh
# Every subcommand's option handling ($NECTAR_BIN), one row per command in
# the table below: `--help` prints the usage on stdout and exits 0; an
# unknown option, a garbage number and a missing value each exit 2 with
# exactly one line on stderr in the one wording of tools/nectar/cli_opts.h
# and nothing on stdout. Adding a command is adding a row.
. "$(dirname "$0")/../common/sh_test.sh"
ENC=tests/fixtures/modernbert/mb_mlm

# name shown in errors | words before the options | a numeric option ("-": none) |
# an option that takes a value ("-": none) | state ("todo": not on the shared parser yet,
# a failure is reported as SKIP until the row is switched to "ok")
rows="
compile|compile|--ctx|-o|ok
compile|compile -m $ENC|--batches|-o|ok
quantize|quantize|-|--type|ok
tokenize|tokenize|-|-p|ok
mil check|mil check|-|--fn|ok
mil run|mil run|--repeat|--out|ok
mil fmt|mil fmt|-|-o|ok
mil info|mil info|-|-|ok
mil bundle|mil bundle|-|-o|ok
bench --compare|bench --compare|--blocks|--a|ok
gen-random|gen-random|--seed|--like|ok
bounds|bounds|-N|--config|ok
bounds|bounds --arch qwen3|--bandwidth|-m|ok
run|run|-n|-m|ok
chat|chat|-n|-m|ok
bench|bench|-p|-m|ok
serve|serve|--port|-m|ok
parity|parity|--repeats|-m|ok
embed|embed|--runs|-m|ok
fill-mask|fill-mask|--top-k|-m|ok
classify|classify|-|-m|ok
ane probe|ane probe|--repeats|--json|ok
ane doctor|ane doctor|-n|-o|ok
"

run() { # expected exit code, command words...: sets out, err, rc
    want=$1
    shift
    # shellcheck disable=SC2086
    "$BIN" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq "$want" ]
}

# one_line_error PATTERN: stdout empty, stderr exactly one line matching PATTERN
one_line_error() {
    [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -Eq "$1" "$TMP/err"
}

# report STATE NAME OK DETAIL: a row marked "todo" collects its results in
# $TMP/todo and prints them (or one SKIP line) when the row is done
report() {
    if [ "$1" = todo ]; then
        if [ "$3" = 1 ]; then echo "PASS $2" >>"$TMP/todo"; else echo "x" >>"$TMP/todo"; fi
    elif [ "$3" = 1 ]; then
        pass "$2"
    else
        fail "$2" "$4"
    fi
}

echo "$rows" | while IFS='|' read -r name words num valopt state; do
    [ -n "$name" ] || continue
    : >"$TMP/todo"
    tag=$(echo "$words" | sed 's/ -m .*/_encoder/; s/ /_/g; s/-//g')
    got() { echo "exit $rc, stdout '$(head -c 200 "$TMP/out")', stderr '$(head -c 300 "$TMP/err")'"; }

    # shellcheck disable=SC2086
    ok=0; run 0 $words --help && grep -q "^usage: nectar $name" "$TMP/out" && [ ! -s "$TMP/err" ] && ok=1
    report "$state" "cli_${tag}_help_on_stdout_exit_0" $ok "$(got)"

    # shellcheck disable=SC2086
    ok=0; run 2 $words --no-such-option && one_line_error "^nectar $name: unknown option '--no-such-option'\$" && ok=1
    report "$state" "cli_${tag}_unknown_option_exit_2" $ok "$(got)"

    if [ "$valopt" != - ]; then
        # shellcheck disable=SC2086
        ok=0; run 2 $words "$valopt" && one_line_error "^nectar $name: $valopt needs a value\$" && ok=1
        report "$state" "cli_${tag}_missing_value_exit_2" $ok "$(got)"
    fi

    if [ "$num" != - ]; then
        for bad in abc 12x 1e999; do
            # shellcheck disable=SC2086
            ok=0; run 2 $words "$num" "$bad" &&
                one_line_error "^nectar $name: $num: '$bad' is not (an integer|a number|a list of integers) in [[(]-?[0-9.e+]+, -?[0-9.e+inf]+[])]\$" && ok=1
            report "$state" "cli_${tag}_garbage_number_${bad%"${bad#??}"}_exit_2" $ok "$(got)"
        done
    fi
    if [ "$state" = todo ]; then
        n_bad=$(grep -c '^x$' "$TMP/todo")
        if [ "$n_bad" -eq 0 ]; then cat "$TMP/todo"; else
            echo "SKIP cli_$tag: not on the shared option parser yet ($n_bad of $(wc -l <"$TMP/todo") checks differ)"
        fi
    fi
done

if run 2 no-such-command && one_line_error "^nectar: unknown command 'no-such-command'\$"; then
    pass cli_unknown_command_exit_2
else fail cli_unknown_command_exit_2 "exit $rc: $(cat "$TMP/err")"; fi

# the parser's own rules, on one converted command
C="compile -m $TMP/none -o $TMP/x"
# shellcheck disable=SC2086
if run 2 $C -t 0 && one_line_error "^nectar compile: -t: '0' is not an integer in \[1, 1024\]\$"; then
    pass cli_number_out_of_range_names_the_range
else fail cli_number_out_of_range_names_the_range "exit $rc: $(cat "$TMP/err")"; fi
# shellcheck disable=SC2086
if run 2 $C --ctx 99999999999999999999999 &&
    one_line_error "^nectar compile: --ctx: '99999999999999999999999' is not an integer in \[32, 1048576\]\$"; then
    pass cli_integer_overflow_refused
else fail cli_integer_overflow_refused "exit $rc: $(cat "$TMP/err")"; fi
# --name=value is the same as --name value: the value reaches the command
# (which then fails on the missing folder, exit 1, not a usage error)
# shellcheck disable=SC2086
if run 1 $C --ctx=64 && grep -q "no such model folder" "$TMP/err"; then
    pass cli_long_option_with_equals
else fail cli_long_option_with_equals "exit $rc: $(cat "$TMP/err")"; fi
# shellcheck disable=SC2086
if run 2 $C --progress=1 && one_line_error "^nectar compile: --progress takes no value\$"; then
    pass cli_flag_refuses_a_value
else fail cli_flag_refuses_a_value "exit $rc: $(cat "$TMP/err")"; fi
if run 2 compile -o "$TMP/x" && one_line_error "^nectar compile: --model DIR is required\$"; then
    pass cli_required_option_named
else fail cli_required_option_named "exit $rc: $(cat "$TMP/err")"; fi
# shellcheck disable=SC2086
if run 2 $C --lm-head gpu && one_line_error "^nectar compile: --lm-head: 'gpu' is not one of ane\|cpu\$"; then
    pass cli_choice_lists_the_choices
else fail cli_choice_lists_the_choices "exit $rc: $(cat "$TMP/err")"; fi
