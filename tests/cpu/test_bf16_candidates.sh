#!/bin/sh
# Every kernel the accurate bf16 contract may choose by measurement
# (cpu_wisdom.h) holds the Hugging Face parity bound (1e-4 on the logits,
# greedy identical) on the Qwen3 fixtures: the parity binary runs once per
# decode and prompt candidate, forced through NECTAR_BF16=accurate,decode=K
# (or prompt=K). The candidates are the ones this CPU offers, read from the
# message a name that is none gets.
. tests/common/on_tables.sh
BUILD=${NECTAR_BUILD:-build}
bin=$BUILD/tests/models/test_qwen3_parity
[ -x "$bin" ] || { echo "FAIL bf16_candidates: $bin not built"; exit 1; }
status=0
for slot in decode prompt; do
    # "kernel '?' is not a candidate here (a, b, c)"
    list=$(NECTAR_BF16="accurate,$slot=?" "$bin" 2>&1 | sed -n "s/.*not a candidate here (\(.*\)).*/\1/p" | tr -d ,)
    if [ -z "$list" ]; then
        echo "FAIL ${slot}_candidates_listed: no candidate list in the error message"
        status=1
        continue
    fi
    for k in $list; do
        out=$(NECTAR_BF16="accurate,$slot=$k" "$bin" 2>&1)
        name=$(echo "${slot}_$k" | tr - _)
        if echo "$out" | grep -q '^FAIL '; then
            echo "FAIL ${name}_holds_the_parity_bound"
            echo "$out" | grep -E '^(FAIL|  )' | sed 's/^/  /'
            status=1
        else
            echo "PASS ${name}_holds_the_parity_bound"
            echo "$out" | grep 'tiny_bf16 (bf16' | sed 's/^ */  /'
        fi
    done
done
exit $status
