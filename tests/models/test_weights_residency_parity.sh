#!/bin/sh
# The Qwen3 and Qwen3.5 parity tests (against HF's logits) with the weights
# mmapped and read into memory (NECTAR_WEIGHTS, io/weights_residency.h):
# the default picks one of the two by the machine, so each is forced here.
status=0
for fam in qwen3 qwen35; do
    BIN=${NECTAR_BUILD:-build}/tests/models/test_${fam}_parity
    if [ ! -x "$BIN" ]; then echo "SKIP ${fam}_residency: $BIN not built"; continue; fi
    for mode in mmap resident; do
        out=$(NECTAR_WEIGHTS=$mode "$BIN" 2>&1) || status=1
        printf '%s\n' "$out" | sed -n -e "s/^PASS /PASS ${mode}_/p" -e "s/^FAIL /FAIL ${mode}_/p" \
            -e "s/^SKIP /SKIP ${mode}_/p" -e "/^  /p"
    done
done
exit $status
