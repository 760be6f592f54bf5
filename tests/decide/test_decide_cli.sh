#!/bin/sh
# `nectar decide` end to end on the fixtures of tools/make_decision_fixtures.py:
# the marker, calibrated and action probabilities of every input of
# ref/texts.txt against the PyTorch reference (|diff| <= 1e-4), the same
# through --json, and bad inputs: exit 1 with one stderr line naming the
# problem and nothing on stdout.
BIN=${NECTAR_BIN:-build/nectar}
FIX=tests/fixtures/decision
T=${NECTAR_BUILD:-build}/tmp/test_decide_cli.$$
if [ ! -x "$BIN" ]; then echo "SKIP decide_cli: $BIN not built"; exit 0; fi
rm -rf "$T"; mkdir -p "$T"

# the probabilities of decide's JSON lines, one number a line, in the fixture's order
probs() {
    sed 's/.*"marker_probs": \[\([^]]*\)\], "calibrated": \[\([^]]*\)\], "action_probs": \[\([^]]*\)\].*/\1, \2, \3/' |
        tr ',' '\n' | tr -d ' '
}
close() {
    if [ "$(wc -l <"$2")" -eq "$(wc -l <"$3")" ] && [ -s "$2" ] &&
        paste "$2" "$3" | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4) bad = 1}
                               END {exit bad}'; then
        echo "PASS $1"
    else
        echo "FAIL $1: probabilities differ from the reference"; paste "$2" "$3" | head -5
    fi
}

for m in dm_multi dm_compact dm_k3; do
    "$BIN" decide -m $FIX/$m -f $FIX/$m/ref/texts.txt -t 2 2>"$T/err" | probs >"$T/$m.txt"
    close "decide_${m}_matches_reference" "$T/$m.txt" $FIX/$m/ref/decide.txt
done

# --json: texts as objects give the same numbers
sed 's/"/\\"/g; s/.*/{"text": "&"}/' $FIX/dm_k3/ref/texts.txt | paste -sd, | sed 's/.*/[&]/' >"$T/in.json"
"$BIN" decide -m $FIX/dm_k3 --json "$T/in.json" 2>/dev/null | probs >"$T/json.txt"
close decide_json_texts_match_reference "$T/json.txt" $FIX/dm_k3/ref/decide.txt

# labels from decision.json name the most likely action
if "$BIN" decide -m $FIX/dm_multi -p "Which city? <m1> Paris <m2> Berlin <m3> Rome <m4> Tokyo" \
    2>/dev/null | grep -q '"action": "ask"}$'; then echo "PASS decide_names_the_action"
else echo "FAIL decide_names_the_action"; fi

# bounds of a decision folder: its head layers from decision.json; A by the
# study's formula with dm_k3's N=2 D=24 I=32 H=2 I_h=48 (config.json, decision.json):
# 2(4*24^2 + 3*24*32) + 2(4*24^2 + 2*24*48) = 18432
if "$BIN" bounds -m $FIX/dm_k3 --json 2>&1 | tr -d ' \n' | grep -q '"H":2,"I_h":48},"params":{"A":18432}'; then
    echo "PASS bounds_reads_the_decision_head"
else echo "FAIL bounds_reads_the_decision_head: $("$BIN" bounds -m $FIX/dm_k3 2>&1 | head -3)"; fi

# bad inputs: exit 1, one line naming it, no partial stdout
bad() { # NAME WANT-IN-MESSAGE ARGS...
    name=$1; want=$2; shift 2
    "$BIN" decide "$@" >"$T/out" 2>"$T/err"; rc=$?
    if [ $rc -eq 1 ] && [ ! -s "$T/out" ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
        grep -q "$want" "$T/err"; then echo "PASS $name"
    else echo "FAIL $name: rc $rc, stderr: $(cat "$T/err"), stdout: $(head -c 200 "$T/out")"; fi
}
printf '%s\n' "[OPT] a [OPT] b [OPT] c [OPT] d" "only [OPT] two [OPT]" >"$T/lines.txt"
bad decide_missing_marker_fails "input 2: marker 3 (token id 427) is not in the input" \
    -m $FIX/dm_compact -f "$T/lines.txt"
echo '[{"ids": [1, 2, 3], "markers": [0, 1]}]' >"$T/few.json"
bad decide_json_wrong_marker_count "'markers' has 2 positions; the model has 4 markers" \
    -m $FIX/dm_compact --json "$T/few.json"
echo '[{"ids": [1, 2, 3, 4, 5], "markers": [0, 1, 2, 9]}]' >"$T/far.json"
bad decide_json_marker_outside "marker 4 at position 9 is not a real token" \
    -m $FIX/dm_compact --json "$T/far.json"
echo '[{"ids": [1, 99999, 3, 4, 5], "markers": [0, 1, 2, 3]}]' >"$T/vocab.json"
bad decide_json_id_outside_vocab "99999" -m $FIX/dm_compact --json "$T/vocab.json"
echo '[{"nothing": 1}]' >"$T/none.json"
bad decide_json_needs_text_or_ids "input 1 has neither 'text' nor 'ids'" \
    -m $FIX/dm_compact --json "$T/none.json"
bad decide_not_a_decision_folder "decision.json" -m tests/fixtures/modernbert/mb_base -p x
rm -rf "$T"
