#!/bin/sh
# Load benchmark for `nectar serve` (not a test): for each concurrency C in
# $LEVELS, C clients each send $REQS completions of $TOKENS tokens
# (greedy, ignoring eos is not possible, so the prompt is chosen to run
# long) at the same time; prints aggregate generated tokens/s over the wall
# time and the p50/p95 time to first token (arrival -> first token, from
# the server's "timings.ttft_ms"). Needs curl and jq.
#
#   tools/serve_load.sh http://127.0.0.1:8080 [LEVELS] [TOKENS] [REQS]
# e.g. nectar gen-random --like qwen3-0.6b /tmp/q06 && nectar serve -m /tmp/q06 --parallel 8 &
#      tools/serve_load.sh http://127.0.0.1:8080 "1 4 8" 32 1
URL=${1:?usage: serve_load.sh URL [LEVELS] [TOKENS] [REQS]}
LEVELS=${2:-"1 4 8"}
TOKENS=${3:-32}
REQS=${4:-1}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
now() { date +%s.%N; }
pct() { # file, percentile (0-100): nearest-rank
    sort -n "$1" | awk -v p="$2" '{a[NR]=$1} END {i=int((p/100)*NR+0.999999); if(i<1)i=1; print a[i]}'
}
printf '%-12s %-10s %-14s %-12s %-12s\n' concurrency requests "agg tok/s" "ttft p50 ms" "ttft p95 ms"
for C in $LEVELS; do
    rm -f "$TMP"/r.*
    t0=$(now)
    c=0
    while [ $c -lt "$C" ]; do
        (
            k=0
            while [ $k -lt "$REQS" ]; do
                curl -s --max-time 600 "$URL/v1/completions" -H 'Content-Type: application/json' \
                    -d "{\"prompt\":\"Client $c request $k: once upon a time\",\"max_tokens\":$TOKENS,\"temperature\":0}" \
                    >"$TMP/r.$c.$k"
                k=$((k + 1))
            done
        ) &
        c=$((c + 1))
    done
    wait
    t1=$(now)
    cat "$TMP"/r.* | jq -r '.usage.completion_tokens' >"$TMP/tokens"
    cat "$TMP"/r.* | jq -r '.timings.ttft_ms' >"$TMP/ttft"
    total=$(awk '{s+=$1} END {print s}' "$TMP/tokens")
    n=$(wc -l <"$TMP/tokens")
    tps=$(echo "$total $t0 $t1" | awk '{printf "%.2f", $1/($3-$2)}')
    printf '%-12s %-10s %-14s %-12.1f %-12.1f\n' "$C" "$n" "$tps" "$(pct "$TMP/ttft" 50)" "$(pct "$TMP/ttft" 95)"
done
