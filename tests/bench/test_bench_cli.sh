#!/bin/sh
# `nectar bounds` and `nectar bench --compare` ($NECTAR_BIN) end to end:
# the study's 0.622 ms floor and Qwen3-0.6B counts in --json, clear errors
# with a non-zero exit on bad input, a comparison of two in-process cpu:DIR
# candidates (tiny Qwen3 fixtures) whose outputs are all written, the workload
# hash equal to sha256sum's, and a missing MIL bundle named in the error;
# bench's kernel choices: measured into the wisdom file NECTAR_WISDOM names,
# then read back, a corrupted file reported in one line and replaced; the
# bandwidth probe names the pattern it took.
. "$(dirname "$0")/../common/sh_test.sh"
# no measuring into the user's cache from the cases that do not test it
export NECTAR_WISDOM=off
FIX=tests/fixtures/bench

if "$BIN" bounds --arch modernbert -N 22 -D 768 -I 1152 -H 2 --bandwidth 400 --format fp16 --json \
    >"$TMP/b.json" 2>"$TMP/err" && grep -q '"bandwidth_floor_s": 0.00062226' "$TMP/b.json"; then
    pass bounds_json_gives_0622_ms
else
    fail bounds_json_gives_0622_ms "$(cat "$TMP/b.json" "$TMP/err" | head -5)"
fi

if "$BIN" bounds --arch qwen3 --config "$FIX/qwen3-0.6b-config.json" >"$TMP/q.txt" 2>&1 &&
    grep -q "596049920" "$TMP/q.txt" && grep -q "440467456" "$TMP/q.txt"; then
    pass bounds_qwen3_table_counts
else
    fail bounds_qwen3_table_counts "$(head -5 "$TMP/q.txt")"
fi

if "$BIN" bounds --fraction 0.9 --speedup inf >"$TMP/a.txt" 2>&1 && grep -q "= 10$" "$TMP/a.txt"; then
    pass bounds_amdahl_limit
else
    fail bounds_amdahl_limit "$(cat "$TMP/a.txt")"
fi

# bad input: one clear line naming the culprit, exit 1 (2 for a usage
# error), nothing on stdout
check_exit() { # name, expected text, exit code, args...
    name=$1 want=$2 code=$3
    shift 3
    "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq "$code" ] && grep -q -e "$want" "$TMP/err" && [ ! -s "$TMP/out" ]; then
        pass "$name"
    else
        fail "$name" "exit $rc, stderr '$(cat "$TMP/err")'"
    fi
}
check_error() { n=$1 w=$2; shift 2; check_exit "$n" "$w" 1 "$@"; }
check_usage() { n=$1 w=$2; shift 2; check_exit "$n" "$w" 2 "$@"; }
check_error bounds_missing_config "no-such.json" bounds --arch qwen3 --config "$TMP/no-such.json"
check_error bounds_bad_config_field "num_key_value_heads" bounds --arch qwen3 --config "$FIX/bad-config-heads.json"
check_usage bounds_bad_number "-D: '7x8' is not an integer" bounds --arch modernbert -N 22 -D 7x8 -I 1152
check_error bounds_unknown_format "--format fp8" bounds --like qwen3-0.6b --format fp8
check_error compare_missing_bundle "x.bundle" bench --compare --a mil:x.bundle --b spin:1
check_usage compare_needs_two "both --a and --b" bench --compare --a spin:1
check_usage compare_few_blocks "blocks: '3' is not an integer in \[5, 100000\]" bench --compare --a spin:1 --b spin:1 --blocks 3
check_error compare_missing_prompts "no-prompts.txt" bench --compare --a spin:1 --b spin:1 --prompts "$TMP/no-prompts.txt"

# two tiny Qwen3 models through the cpu engine, prompts hashed
OUT="$TMP/cmp"
if "$BIN" bench --compare --a cpu:tests/fixtures/qwen3/tiny_gqa2 --b cpu:tests/fixtures/qwen3/tiny_gqa4_tied \
    --prompts "$FIX/prompts.txt" --per-block 3 --warmup 1 --power none --no-plot --out "$OUT" \
    >"$TMP/report.md" 2>"$TMP/err"; then
    ok=1
    for f in samples.csv blocks.csv power.csv summary.json report.md; do [ -s "$OUT/$f" ] || ok=0; done
    [ "$(wc -l <"$OUT/samples.csv")" -eq 31 ] || ok=0
    grep -q "speed gain S = t_A / t_B" "$TMP/report.md" || ok=0
    if [ $ok -eq 1 ]; then pass compare_cpu_candidates_write_outputs; else fail compare_cpu_candidates_write_outputs "missing output in $OUT"; fi
    if command -v sha256sum >/dev/null 2>&1; then
        h=$(sha256sum "$FIX/prompts.txt" | cut -d' ' -f1)
        if grep -q "\"sha256\": \"$h\"" "$OUT/summary.json"; then
            pass compare_workload_hash_matches_sha256sum
        else
            fail compare_workload_hash_matches_sha256sum "want $h"
        fi
    else
        echo "SKIP compare_workload_hash_matches_sha256sum: sha256sum not found"
    fi
else
    fail compare_cpu_candidates_write_outputs "$(cat "$TMP/err")"
fi

# an external command and an equal-offered-load run through the CLI
if "$BIN" bench --compare --a-cmd "true" --b spin:1000 --rate 200 --deadline-ms 50 --per-block 2 --warmup 0 \
    --power none --no-plot --json --out "$TMP/rate" >"$TMP/rate.json" 2>"$TMP/err" &&
    grep -q '"mode": "equal_offered_load"' "$TMP/rate.json" && grep -q '"deadline_misses"' "$TMP/rate.json"; then
    pass compare_rate_mode_json
else
    fail compare_rate_mode_json "$(cat "$TMP/err")"
fi

# bench's prompt work (--json "pp_flops") against the checkpoint itself: every
# 2-D tensor under layers. twice per token, causal attention over the
# q_proj heads (Qwen3.5's q_proj also makes the gate: half its rows), the
# LM head once; read from the safetensors header with jq, not from a config.
expected_pp_flops() { # FILE P GATE
    n=$(od -An -t u8 -N8 "$1" | tr -d ' ')
    tail -c +9 "$1" | head -c "$n" | jq --argjson P "$2" --argjson G "$3" '
        [to_entries[] | select(.key != "__metadata__")] as $t
        | ([$t[] | select((.key | contains(".layers.")) and (.value.shape | length) == 2)
            | .value.shape[0] * .value.shape[1]] | add) as $lm
        | ([$t[] | select(.key | endswith("self_attn.q_proj.weight"))
            | 4 * (.value.shape[0] / $G) * $P * ($P + 1) / 2] | add // 0) as $att
        | ([$t[] | select(.key | endswith("embed_tokens.weight"))
            | .value.shape[0] * .value.shape[1]][0]) as $head
        | 2 * $P * $lm + $att + 2 * $head'
}
for c in "qwen35/tiny_text_untied 2" "qwen35/tiny_vl_tied 2" "qwen3/tiny_gqa2 1"; do
    set -- $c
    M=tests/fixtures/$1
    want=$(expected_pp_flops "$M/model.safetensors" 16 "$2")
    got=$("$BIN" bench -m "$M" -p 16 -n 1 --runs 1 --json 2>/dev/null | jq '.pp_flops')
    if [ -n "$want" ] && [ "$got" = "$want" ]; then
        pass "bench_pp_flops_equal_the_checkpoint_count_$(basename "$M")"
    else
        fail "bench_pp_flops_equal_the_checkpoint_count_$(basename "$M")" "got $got, the checkpoint gives $want"
    fi
done

# Kernel choices: the first bench measures and writes the wisdom file, the
# second reads it; a corrupted file is named with its line and replaced.
W="$TMP/wisdom/nectar/wisdom"
M=tests/fixtures/qwen3/tiny_bf16
if NECTAR_WISDOM="$W" "$BIN" bench -m "$M" -p 8 -n 2 --runs 1 --bw-mib 16 --json >"$TMP/w1.json" 2>"$TMP/err" &&
    NECTAR_WISDOM="$W" "$BIN" bench -m "$M" -p 8 -n 2 --runs 1 --bw-mib 16 --json >"$TMP/w2.json" 2>>"$TMP/err" &&
    k1=$(jq -r '.kernel_choices["decode-bf16-accurate"].kernel' "$TMP/w1.json") &&
    k2=$(jq -r '.kernel_choices["decode-bf16-accurate"].kernel' "$TMP/w2.json") &&
    why=$(jq -r '.kernel_choices["decode-bf16-accurate"].why' "$TMP/w2.json") && [ "$k1" = "$k2" ] &&
    { [ "$why" = "from the wisdom file" ] || [ "$why" = "the only candidate" ]; }; then
    pass bench_kernel_choices_measured_then_read_back
else
    fail bench_kernel_choices_measured_then_read_back "$(cat "$TMP/err") $k1 $k2 $why"
fi
printf '# nectar kernel wisdom 7\nnot enough fields\n' >"$W"
if NECTAR_WISDOM="$W" "$BIN" bench -m "$M" -p 8 -n 2 --runs 1 --bw-mib 16 >"$TMP/w3.txt" 2>"$TMP/err" &&
    grep -q "wisdom $W:2: not 4 tab-separated fields; measuring again" "$TMP/w3.txt" &&
    head -1 "$W" | grep -q '^# nectar kernel wisdom 7$' && ! grep -q 'not enough' "$W"; then
    pass bench_corrupted_wisdom_named_and_replaced
else
    fail bench_corrupted_wisdom_named_and_replaced "$(cat "$TMP/err" "$TMP/w3.txt" | head -12)"
fi
# --tune: the decode kernel chosen by timing the model's decoding with the
# probe's shortlist, kept in the wisdom file marked "engine" and read back
# by the next run (where this CPU has a choice; else one line saying there
# is nothing to time); the greedy text is the default kernels'; --json
# keeps stdout one JSON object; no wisdom file to keep it in is a usage
# error; Q4 weights have nothing to time.
T="$TMP/tune/wisdom"
if NECTAR_WISDOM="$T" "$BIN" bench -m "$M" --tune -p 0 -n 2 --runs 1 --bw-mib 16 >"$TMP/t1.txt" 2>"$TMP/err"; then
    if grep -q "^engine tuning of decode-bf16-accurate" "$TMP/t1.txt"; then
        chosen=$(sed -n 's/^  \([a-z0-9-]*\) .*<- chosen$/\1/p' "$TMP/t1.txt")
        kept=$(grep "	decode-bf16-accurate	" "$T" | cut -f3,5)
        NECTAR_WISDOM="$T" "$BIN" bench -m "$M" -p 0 -n 2 --runs 1 --bw-mib 16 --json >"$TMP/t2.json" 2>>"$TMP/err"
        why=$(jq -r '.kernel_choices["decode-bf16-accurate"] | .why + ":" + .kernel' "$TMP/t2.json")
        if [ -n "$chosen" ] && [ "$kept" = "$chosen	engine" ] &&
            [ "$why" = "from the wisdom file (timed in the engine):$chosen" ] &&
            grep -q "decode-bf16-accurate *$chosen *from the wisdom file (timed in the engine)" "$TMP/t1.txt"; then
            pass bench_tune_keeps_the_engines_choice
        else
            fail bench_tune_keeps_the_engines_choice "chosen '$chosen' kept '$kept' why '$why' $(cat "$TMP/err" "$TMP/t1.txt" | head -12)"
        fi
        NECTAR_WISDOM=off "$BIN" run -t 2 -m "$M" -p "In the beginning" --temp 0 -n 24 >"$TMP/off.txt" 2>"$TMP/err0"
        NECTAR_WISDOM="$T" "$BIN" run -t 2 -m "$M" -p "In the beginning" --temp 0 -n 24 >"$TMP/tuned.txt" 2>>"$TMP/err0"
        if [ -s "$TMP/off.txt" ] && cmp -s "$TMP/off.txt" "$TMP/tuned.txt"; then
            pass bench_tune_greedy_text_unchanged
        else
            fail bench_tune_greedy_text_unchanged "'$(cat "$TMP/off.txt")' '$(cat "$TMP/tuned.txt")' $(head -3 "$TMP/err0")"
        fi
    elif grep -q "^--tune: decode-bf16-accurate has one candidate here" "$TMP/t1.txt"; then
        echo "SKIP bench_tune_keeps_the_engines_choice: one bf16 decode kernel on this CPU"
    else
        fail bench_tune_keeps_the_engines_choice "$(cat "$TMP/err" "$TMP/t1.txt" | head -12)"
    fi
else
    fail bench_tune_keeps_the_engines_choice "exit $?: $(cat "$TMP/err" | head -5)"
fi
if NECTAR_WISDOM="$TMP/tune/w2" "$BIN" bench -m "$M" --tune -p 0 -n 2 --runs 1 --bw-mib 16 --json \
    >"$TMP/t3.json" 2>"$TMP/t3.err" && jq -e '.kernel_choices' "$TMP/t3.json" >/dev/null &&
    grep -q "^engine tuning of\|^--tune: .*nothing to time" "$TMP/t3.err"; then
    pass bench_tune_json_stays_one_object
else
    fail bench_tune_json_stays_one_object "$(head -c 600 "$TMP/t3.json") $(head -5 "$TMP/t3.err")"
fi
NECTAR_WISDOM=off "$BIN" bench -m "$M" --tune -p 0 -n 2 --runs 1 >"$TMP/t4.txt" 2>"$TMP/t4.err"
rc=$?
if [ $rc = 2 ] && [ ! -s "$TMP/t4.txt" ] && [ "$(wc -l <"$TMP/t4.err")" -ge 1 ] &&
    head -1 "$TMP/t4.err" | grep -q -- "--tune: no wisdom file to keep the choice in (NECTAR_WISDOM is off)"; then
    pass bench_tune_without_wisdom_is_a_usage_error
else
    fail bench_tune_without_wisdom_is_a_usage_error "exit $rc: $(cat "$TMP/t4.err" "$TMP/t4.txt" | head -4)"
fi
if "$BIN" quantize -m "$M" --type q4 -o "$TMP/q4" >/dev/null 2>"$TMP/err" &&
    NECTAR_WISDOM="$TMP/tune/w3" "$BIN" bench -m "$TMP/q4" --tune -p 0 -n 2 --runs 1 --bw-mib 16 >"$TMP/t5.txt" 2>"$TMP/err" &&
    grep -q "^--tune: nothing to time on q4 weights" "$TMP/t5.txt" && grep -q "^| tg2 " "$TMP/t5.txt"; then
    pass bench_tune_q4_has_nothing_to_time
else
    fail bench_tune_q4_has_nothing_to_time "$(cat "$TMP/err" "$TMP/t5.txt" | head -6)"
fi
if "$BIN" bench --bandwidth --bw-mib 16 --runs 1 --json >"$TMP/bw.json" 2>"$TMP/err" &&
    p=$(jq -r '.read_bandwidth_bytes_per_s.pattern' "$TMP/bw.json") &&
    jq -e --arg p "$p" '.read_bandwidth_bytes_per_s | .best == (.patterns | to_entries | map(.value) | max) and (.patterns[$p] == .best)' "$TMP/bw.json" >/dev/null; then
    pass bench_bandwidth_is_the_fastest_pattern
else
    fail bench_bandwidth_is_the_fastest_pattern "$(cat "$TMP/err" "$TMP/bw.json" | head -8)"
fi
# The default -p 512 shrinks to a short model's context (256 here); a
# number given that does not fit is one error line and a non-zero exit.
if "$BIN" bench -m tests/fixtures/qwen3/tiny_bf16 -n 2 --runs 1 --bw-mib 16 >"$TMP/ctx.txt" 2>"$TMP/err" &&
    grep -q '^| pp255 ' "$TMP/ctx.txt" &&
    ! "$BIN" bench -m tests/fixtures/qwen3/tiny_bf16 -p 600 -n 2 --runs 1 --bw-mib 16 >/dev/null 2>"$TMP/err2" &&
    [ "$(wc -l <"$TMP/err2")" -eq 1 ] && grep -q 'exceeds the context of 256 tokens' "$TMP/err2"; then
    pass bench_default_prompt_fits_a_short_context
else
    fail bench_default_prompt_fits_a_short_context "$(cat "$TMP/err" "$TMP/err2" "$TMP/ctx.txt" | head -8)"
fi

# --draft: speculative decoding against plain decoding. With the target as
# its own draft every proposal is the target's greedy token (acceptance 1,
# draft-max + 1 tokens per verification step but the last), and in every
# run the greedy tokens equal plain decoding's.
M=tests/fixtures/qwen3/tiny_bf16
if "$BIN" bench -m "$M" --draft "$M" --draft-max 3 -p 0 -n 17 --runs 2 --bw-mib 16 --json \
    >"$TMP/d.json" 2>"$TMP/err" &&
    jq -e '.draft | .same_output and .acceptance == 1 and .accepted == .drafted and .drafted > 0
        and .generated == 34 and .verification_steps == 2 * 4 and .plain_tok_per_s > 0
        and .tokens_per_step == 4 and .draft_tok_per_s > 0 and .draft_max == 3' "$TMP/d.json" >/dev/null; then
    pass bench_draft_self_accepts_everything_same_output
else
    fail bench_draft_self_accepts_everything_same_output "$(cat "$TMP/err" "$TMP/d.json" | tail -8)"
fi
if "$BIN" quantize -m "$M" --type q4 -o "$TMP/q4" >/dev/null 2>"$TMP/err" &&
    "$BIN" bench -m "$M" --draft "$TMP/q4" -p 0 -n 16 --runs 1 --bw-mib 16 >"$TMP/d.txt" 2>"$TMP/err" &&
    grep -q "^| with the draft |" "$TMP/d.txt" && grep -q "greedy output identical in every run" "$TMP/d.txt" &&
    grep -q "acceptance [0-9.]*% ([0-9]* of [0-9]* drafted tokens)" "$TMP/d.txt"; then
    pass bench_draft_q4_of_the_same_weights
else
    fail bench_draft_q4_of_the_same_weights "$(cat "$TMP/err" "$TMP/d.txt" | tail -8)"
fi
check_error bench_draft_missing_folder "no-such-draft" bench -m "$M" --draft "$TMP/no-such-draft" -p 0 -n 2 --runs 1 --bw-mib 16
check_usage bench_draft_cpu_only "cpu backend only" bench -m "$M" --draft "$M" --backend mil -n 2
