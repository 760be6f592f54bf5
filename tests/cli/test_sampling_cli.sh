#!/bin/sh
# The command line's sampling flags come from the one sampling parameter
# table (src/gen/sampling_params.c): on run and chat an out-of-range value is
# one line naming the flag and the same range nc_sampling_set and
# generation_config.json give (tests/serve/test_sampling_surfaces.c), exit
# 2, nothing on stdout. The ranges are written out here from that spec.
. "$(dirname "$0")/../common/sh_test.sh"
M=tests/fixtures/qwen3/tiny_gqa2

# flag | out-of-range value | the message after "nectar CMD: "
rows="
--temp|100.5|--temp: '100.5' is not a number in [0, 100]
--top-k|-1|--top-k: '-1' is not an integer in [0, 2147483647]
--top-p|1.5|--top-p: '1.5' is not a number in [0, 1]
--min-p|-0.5|--min-p: '-0.5' is not a number in [0, 1]
--repeat-penalty|0|--repeat-penalty: '0' is not a number in (0, 100]
--presence-penalty|101|--presence-penalty: '101' is not a number in [-100, 100]
--frequency-penalty|-101|--frequency-penalty: '-101' is not a number in [-100, 100]
"
echo "$rows" | while IFS='|' read -r flag value want; do
    [ -z "$flag" ] && continue
    for cmd in run chat; do
        p=""
        [ $cmd = run ] && p="-p x"
        "$BIN" $cmd -m $M $p "$flag" "$value" >"$TMP/out" 2>"$TMP/err" </dev/null
        rc=$?
        name="${cmd}_${flag#--}_out_of_range_names_flag_and_range"
        if [ $rc -eq 2 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
            [ "$(cat "$TMP/err")" = "nectar $cmd: $want" ]; then
            pass "$name"
        else fail "$name" "rc $rc: $(cat "$TMP/err")"; fi
    done
done
