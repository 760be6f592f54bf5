#!/bin/sh
# Runs the libFuzzer builds of `make fuzz` (build/fuzz/bin) and prints, per
# target: executions, edges covered (libFuzzer's cov:), corpus size, crashes.
#   scripts/fuzz-run.sh [-t SECONDS] [-c CPU_MINUTES] [-o DIR] [-n NICE] [-b BINDIR] [target...]
# -t SECONDS      wall-clock time per target (default 60)
# -c CPU_MINUTES  instead: run each target until it has used this much CPU
#                 time (user+system, summed over the runs kept in DIR),
#                 however long that takes on a busy machine; cpu_s in the
#                 summary is that sum, what the campaign table counts
# -o DIR          keep the corpora, crash files and logs in DIR/<target>/
#                 (default: a fresh temporary folder); a later run with the
#                 same DIR starts from what the earlier one found
# -n NICE         niceness of the fuzzers (default 0; 19 on a shared machine)
# -b BINDIR       the fuzz binaries (default build/fuzz/bin)
# Seeds come from tests/fuzz/corpus/<target> (read only), dictionaries from
# tests/fuzz/dict. Run from the repository root: some targets open fixtures.
# Exits non-zero when any target crashed; the crash inputs stay in
# DIR/<target>/crashes/ (reproduce with build/fuzz/bin/<target> FILE).
set -u
BIN=build/fuzz/bin
SECS=60
CPU_MIN=""
OUT=""
NICE=0
while getopts t:c:o:n:b: opt; do
    case $opt in
    t) SECS=$OPTARG ;;
    c) CPU_MIN=$OPTARG ;;
    o) OUT=$OPTARG ;;
    n) NICE=$OPTARG ;;
    b) BIN=$OPTARG ;;
    *) echo "usage: $0 [-t SECONDS] [-c CPU_MINUTES] [-o DIR] [-n NICE] [-b BINDIR] [target...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ -d "$BIN" ] || { echo "fuzz-run: $BIN missing: run make fuzz first" >&2; exit 1; }
[ -n "$OUT" ] || OUT=$(mktemp -d "${TMPDIR:-/tmp}/nectar-fuzz.XXXXXX")
mkdir -p "$OUT" || exit 1
TARGETS="$*"
if [ -z "$TARGETS" ]; then
    for f in "$BIN"/fuzz_*; do
        case $f in *.*) continue ;; esac
        [ -f "$f" ] && [ -x "$f" ] && TARGETS="$TARGETS $(basename "$f")"
    done
fi

# The dictionary that fits a target's input format, if any.
dict_for() {
    case $1 in
    fuzz_mil_parse | fuzz_mil_interp) echo tests/fuzz/dict/mil.dict ;;
    fuzz_serve_request | fuzz_serve_job | fuzz_serve_jsonshape) echo tests/fuzz/dict/openai.dict ;;
    fuzz_serve_head) echo tests/fuzz/dict/http.dict ;;
    fuzz_json_schema) echo tests/fuzz/dict/json.dict ;;
    fuzz_tokenizer_load) echo tests/fuzz/dict/tokenizer.dict ;;
    fuzz_safetensors) echo tests/fuzz/dict/safetensors.dict ;;
    fuzz_npy) echo tests/fuzz/dict/npy.dict ;;
    fuzz_chat_template) echo tests/fuzz/dict/chat_template.dict ;;
    fuzz_serve_toolcall) echo tests/fuzz/dict/toolcall.dict ;;
    fuzz_*config | fuzz_*manifest | fuzz_ane_attrs | fuzz_quant_folder) echo tests/fuzz/dict/json.dict ;;
    esac
}

# CPU seconds (user+system) a process has used so far; ps prints
# [[DD-]HH:]MM:SS[.ss] on Linux and macOS alike.
cpu_seconds() {
    ps -o time= -p "$1" 2>/dev/null | awk '{
        t = $1; d = 0
        if (index(t, "-")) { split(t, x, "-"); d = x[1]; t = x[2] }
        n = split(t, a, ":"); s = 0
        for (i = 1; i <= n; i++) s = s * 60 + a[i]
        print int(s + d * 86400) }'
}

failed=0
summary="$OUT/summary.$(date +%Y%m%d-%H%M%S).$$"
printf '%-26s %12s %8s %8s %8s %8s\n' target execs cov corpus crashes cpu_s >"$summary"
for t in $TARGETS; do
    exe="$BIN/$t"
    [ -x "$exe" ] || { echo "fuzz-run: no target $exe" >&2; failed=1; continue; }
    dir="$OUT/$t"
    mkdir -p "$dir/corpus" "$dir/crashes"
    set -- -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 -artifact_prefix="$dir/crashes/"
    d=$(dict_for "$t")
    [ -n "$d" ] && [ -f "$d" ] && set -- "$@" -dict="$d"
    if [ -n "$CPU_MIN" ]; then
        set -- "$@" -max_total_time=864000
    else
        set -- "$@" -max_total_time="$SECS"
    fi
    seeds=tests/fuzz/corpus/$t
    [ -d "$seeds" ] || seeds=""
    log="$dir/log.$(date +%Y%m%d-%H%M%S)"
    nice -n "$NICE" "$exe" "$@" "$dir/corpus" $seeds >"$log" 2>&1 &
    pid=$!
    # CPU seconds of earlier runs with the same DIR count towards -c
    prev=0
    [ -f "$dir/cpu_seconds" ] && prev=$(cat "$dir/cpu_seconds")
    limit=$(( ${CPU_MIN:-0} * 60 ))
    cpu=0
    stopped=0
    while kill -0 "$pid" 2>/dev/null; do
        c=$(cpu_seconds "$pid")
        [ -n "$c" ] && cpu=$c
        echo $((prev + cpu)) >"$dir/cpu_seconds"
        if [ -n "$CPU_MIN" ] && [ $((prev + cpu)) -ge "$limit" ]; then
            kill -INT "$pid" 2>/dev/null # libFuzzer prints its final stats on SIGINT
            stopped=1
            break
        fi
        sleep 2
    done
    wait "$pid"
    rc=$?
    [ "$stopped" -eq 1 ] && [ "$rc" -eq 72 ] && rc=0 # libFuzzer's exit code when interrupted
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | sed 's/cov: //')
    corpus=$(find "$dir/corpus" -type f | wc -l | tr -d ' ')
    # crash-, leak-, timeout-, oom- files; slow-unit- files are not failures
    # (on a busy machine a niced run can stall for seconds on any input)
    crashes=$(find "$dir/crashes" -type f ! -name 'slow-unit-*' | wc -l | tr -d ' ')
    [ "$crashes" -gt 0 ] && failed=1
    printf '%-26s %12s %8s %8s %8s %8s\n' "$t" "${execs:-?}" "${cov:-?}" "$corpus" "$crashes" "$((prev + cpu))" >>"$summary"
    [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && echo "fuzz-run: $t exited $rc: see $log" >&2 && failed=1
done
cat "$summary"
echo "fuzz-run: corpora, crashes and logs in $OUT"
exit $failed
