#!/bin/sh
# Outputs appear whole or not at all, for the commands whose outputs
# tests/cli/test_model_outputs.sh and tests/lower/test_compile_cli.sh do not
# cover: a compile killed at any moment leaves no bundle at OUT (only its
# temporary sibling, which the next compile to OUT removes); bench
# --compare's report folder is written beside its place and renamed, so an
# older report is replaced whole (a file of the old one does not survive)
# and a foreign folder is refused untouched; `ane probe --json FILE` that
# cannot write leaves no file and no temporary one.
BIN=${NECTAR_BIN:-build/nectar}
T=$(mktemp -d "${TMPDIR:-/tmp}/nc_atomic.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
siblings() { ls -d "$1".tmp.* "$1".old.* 2>/dev/null; }

# compile, killed after 0..0.2 s: OUT is absent or a bundle that opens
bad=""
for delay in 0.01 0.03 0.06 0.1 0.15 0.2; do
    rm -rf "$T/b"
    "$BIN" compile -m models/demo -o "$T/b" >/dev/null 2>&1 &
    pid=$!
    sleep $delay
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    if [ -e "$T/b" ] && ! "$BIN" run --backend mil -m "$T/b" -p Hi -n 1 --temp 0 >/dev/null 2>&1; then
        bad="$bad $delay"
    fi
done
[ -z "$bad" ] && pass compile_killed_leaves_no_partial_bundle ||
    fail compile_killed_leaves_no_partial_bundle "a partial bundle after a kill at$bad s"
# a killed process's sibling (made here as a kill leaves it) goes at the next compile
sh -c 'exit 0' &
dead=$!
wait $dead
mkdir -p "$T/b.tmp.$dead/weights" && echo partial >"$T/b.tmp.$dead/weights/weight.bin"
if "$BIN" compile -m models/demo -o "$T/b" >/dev/null 2>"$T/err" && [ -f "$T/b/manifest.json" ] &&
    [ -z "$(siblings "$T/b")" ]; then
    pass compile_removes_what_a_killed_compile_left
else fail compile_removes_what_a_killed_compile_left "$(siblings "$T/b") $(tail -1 "$T/err")"; fi

# bench --compare: an older report replaced whole; a foreign folder refused
cmp_run() { # out folder
    "$BIN" bench --compare --a-cmd true --b-cmd true --per-block 2 --blocks 5 --warmup 0 \
        --power none --no-plot --out "$1" >/dev/null 2>"$T/err"
}
if cmp_run "$T/r" && [ -f "$T/r/summary.json" ]; then
    echo stale >"$T/r/stale.txt"
    if cmp_run "$T/r" && [ -f "$T/r/summary.json" ] && [ ! -e "$T/r/stale.txt" ] &&
        [ -z "$(siblings "$T/r")" ]; then
        pass bench_compare_replaces_an_older_report_whole
    else fail bench_compare_replaces_an_older_report_whole "$(ls "$T/r") $(siblings "$T/r")"; fi
else fail bench_compare_replaces_an_older_report_whole "$(tail -1 "$T/err")"; fi
mkdir -p "$T/mine" && echo keep >"$T/mine/notes.txt"
if ! cmp_run "$T/mine" && grep -q "not a report folder" "$T/err" &&
    [ "$(ls "$T/mine")" = notes.txt ] && [ -z "$(siblings "$T/mine")" ]; then
    pass bench_compare_refuses_a_foreign_folder
else fail bench_compare_refuses_a_foreign_folder "$(cat "$T/err") $(ls "$T/mine")"; fi

# ane probe --json into a folder that is not there: one error, no file
if ! "$BIN" ane probe --device fake --small --no-save --json "$T/nodir/p.json" >/dev/null \
    2>"$T/err" && [ ! -e "$T/nodir" ] && [ "$(wc -l <"$T/err")" -eq 1 ]; then
    pass ane_probe_json_failure_leaves_nothing
else fail ane_probe_json_failure_leaves_nothing "$(cat "$T/err")"; fi
