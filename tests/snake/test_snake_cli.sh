#!/bin/sh
# `nectar snake` end to end: the final line's format, the same seeds giving
# the same result, the --dump data checked against the teacher's rule
# applied to each line's text in awk (an open move first, then a closer
# one, then the lowest move: docs/decision.md), the shipped model playing
# seeded games at a fixed rate (also with its NE region compiled, on the
# mil backend), and bad uses failing with one line.
BIN=${NECTAR_BIN:-build/nectar}
T=${NECTAR_BUILD:-build}/tmp/test_snake_cli.$$
if [ ! -x "$BIN" ]; then echo "SKIP snake_cli: $BIN not built"; exit 0; fi
rm -rf "$T"; mkdir -p "$T"
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1: $3"; fi; }
LINE='^games [0-9]*, mean score [0-9]*\.[0-9][0-9], deadline misses [0-9]*$'

"$BIN" snake --teacher --games 12 --rate 0 >"$T/a" 2>"$T/a.err"
"$BIN" snake --teacher --games 12 --rate 0 >"$T/b" 2>/dev/null
check snake_teacher_final_line "[ \"\$(wc -l <$T/a)\" -eq 1 ] && grep -q '$LINE' $T/a && grep -q '^games 12,' $T/a" "$(cat "$T/a" "$T/a.err")"
check snake_same_seed_same_result "cmp -s $T/a $T/b" "$(cat "$T/a" "$T/b")"
check snake_reports_latency_and_agreement "grep -q 'latency per tick p50 .* agreement with the teacher 100.0%' $T/a.err" "$(cat "$T/a.err")"

"$BIN" snake --teacher --games 5 --rate 0 --explore 0.05 --dump "$T/d.tsv" >/dev/null 2>&1
bad=$(awk -F'\t' '
    { n = split($2, w, " "); m = -1; best = -1; bm = -1
      for (i = 1; i <= n; i++) {
          if (w[i] ~ /^\[/) { m++; s = 0; if (w[i + 1] == "ok") s = 1 + 4 * (w[i + 2] == "open") + 2 * (w[i + 3] == "closer")
                              if (s > best) { best = s; bm = m } } }
      if (m != 3 || bm != $1) bad++ }
    END { print bad + 0 }' "$T/d.tsv")
check snake_dump_labels_follow_the_rule "[ -s $T/d.tsv ] && [ $bad -eq 0 ]" "$bad lines disagree"

M=models/snake
if [ -f $M/decision.json ]; then
    "$BIN" snake -m $M --games 3 --rate 0 -t 2 >"$T/m" 2>"$T/m.err"
    check snake_model_plays "grep -q '$LINE' $T/m && grep -q '^games 3,' $T/m" "$(cat "$T/m" "$T/m.err")"
    "$BIN" snake -m $M --games 1 --rate 200 --no-board -t 2 >"$T/r" 2>/dev/null
    check snake_model_at_a_fixed_rate "grep -q '$LINE' $T/r" "$(cat "$T/r")"
    # the same games with the NE region compiled (B = 3, L = 64) and run in
    # the fp16 interpreter: the same final line here, the crossings reported
    "$BIN" compile -m $M -o "$T/snake.ane" --buckets 64 --batches 3 >/dev/null 2>&1
    "$BIN" snake --backend mil -m "$T/snake.ane" --games 1 --rate 0 -t 2 >"$T/b1" 2>"$T/b1.err"
    "$BIN" snake -m $M --games 1 --rate 0 -t 2 >"$T/c1" 2>/dev/null
    check snake_mil_backend_plays_the_same "grep -q '$LINE' $T/b1 && cmp -s $T/b1 $T/c1 && grep -q '^snake: [0-9]* region calls (last at B=3 L=64: [0-9]* B of fp16 embeddings each); CPU->NE [0-9]* B' $T/b1.err && grep -q '^snake: partition: CPU: tokenizer' $T/b1.err" "$(cat "$T/b1" "$T/c1" "$T/b1.err")"
    # equal offered load on the Snake workload: cpu vs mil vs fake ANE, the
    # study's table (its arithmetic: tests/bench/test_study_table.c)
    "$BIN" bench --compare --snake 1 --rate 50 --deadline-ms 20 --blocks 5 --per-block 2 \
        --warmup 0 --power none --no-plot --out "$T/bc" --a decide:cpu:$M \
        --b decide:mil:"$T/snake.ane" --c decide:ane-fake:"$T/snake.ane" >"$T/bc.md" 2>"$T/bc.err"
    check snake_bench_compare_study_table "grep -q '^## The study.s table (equal offered load: 50 requests/s, deadline 20 ms)' $T/bc.md &&
        grep -q '^| completed decisions | 10 | 10 | 10 |$' $T/bc.md && grep -q '^| deadline misses | [0-9]* | [0-9]* | [0-9]* |$' $T/bc.md &&
        grep -q '^| mean power P (W) | n/a | n/a | n/a |$' $T/bc.md && grep -q '^| S = t_A / t_X | (baseline) | [0-9.e+-]* \[' $T/bc.md &&
        grep -q 'workload: snake teacher.s games, seeds 1..1' $T/bc.md && [ -s $T/bc/study.md ] && [ -s $T/bc/c/report.md ]" "$(cat "$T/bc.err" "$T/bc.md" | tail -20)"
else
    echo "SKIP snake_model_plays: $M not present"
fi

# energy where a power source is found: a replayed constant 2 W stream (timed by its
# arrival on a loaded machine, so the band is loose)
PM="powermetrics-cmd:while :; do printf '<plist><dict><key>elapsed_ns</key><integer>50000000</integer><key>combined_power</key><real>2000</real></dict></plist>\\0'; sleep 0.05; done"
"$BIN" snake --teacher --games 1 --rate 50 --no-board --power "$PM" >"$T/p" 2>"$T/p.err"
w=$(sed -n 's/.*mean power \([0-9.]*\) W.*/\1/p' "$T/p.err")
check snake_reports_energy "grep -q '$LINE' $T/p && [ -n \"$w\" ] && awk -v w=$w 'BEGIN {exit !(w > 0.5 && w < 3)}'" "$(cat "$T/p.err")"
"$BIN" snake --teacher --games 1 --rate 0 --power none >/dev/null 2>"$T/n.err"
check snake_no_energy_without_a_source "! grep -q energy $T/n.err" "$(cat "$T/n.err")"

"$BIN" snake --games 2 >"$T/u" 2>"$T/u.err"; rc=$?
check snake_needs_a_player "[ $rc -eq 2 ] && grep -q 'give one of -m DIR or --teacher' $T/u.err" "rc $rc"
"$BIN" snake -m tests/fixtures/decision/dm_k3 --rate 0 >"$T/k" 2>"$T/k.err"; rc=$?
check snake_rejects_a_model_without_4_moves "[ $rc -eq 1 ] && [ ! -s $T/k ] && [ \"\$(wc -l <$T/k.err)\" -eq 1 ] && grep -q 'Snake needs 4 and 4' $T/k.err" "rc $rc: $(cat "$T/k.err")"
"$BIN" snake --teacher --rate 0 --dump "$T/no/such/dir/x.tsv" >/dev/null 2>"$T/w.err"; rc=$?
check snake_dump_unwritable "[ $rc -eq 1 ] && grep -q 'cannot write' $T/w.err" "rc $rc"
rm -rf "$T"
