#!/bin/sh
# `gen-random --type q8|q4` ($NECTAR_BIN): the folder equals, file for file,
# what `nectar quantize` makes of the bf16 random folder of the same seed
# (tiny shape, another thread count), and bench loads it as q8/q4;
# --dry-run's bytes are the tiny shape's q8 sizes counted here from the
# preset (34 bytes per 32 weights, bf16 norms); an encoder shape is refused
# in one line, with nothing written.
BIN=${NECTAR_BIN:-build/nectar}
T=${NECTAR_BUILD:-build}/tmp/test_gen_random_quant.$$
if [ ! -x "$BIN" ]; then echo "SKIP gen_random_quant: $BIN not built"; exit 0; fi
rm -rf "$T"; mkdir -p "$T"
trap 'rm -rf "$T"' EXIT

"$BIN" gen-random --like tiny --seed 7 -t 2 "$T/bf16" 2>"$T/err" || { echo "FAIL gen_random_quant: $(cat "$T/err")"; exit 0; }
for type in q8 q4; do
    if "$BIN" quantize -m "$T/bf16" --type $type -o "$T/quantized_$type" >/dev/null 2>"$T/err" &&
        "$BIN" gen-random --like tiny --seed 7 -t 1 --type $type "$T/direct_$type" 2>>"$T/err"; then
        diffs=""
        for f in $(cd "$T/quantized_$type" && ls); do
            cmp -s "$T/quantized_$type/$f" "$T/direct_$type/$f" || diffs="$diffs $f"
        done
        if [ -z "$diffs" ] && [ "$(ls "$T/direct_$type" | wc -l)" -eq "$(ls "$T/quantized_$type" | wc -l)" ]; then
            echo "PASS gen_random_${type}_equals_quantize"
        else echo "FAIL gen_random_${type}_equals_quantize: differ:$diffs"; fi
        if "$BIN" bench -m "$T/direct_$type" -p 4 -n 2 --runs 1 --bw-mib 8 -t 1 >"$T/bench" 2>&1 &&
            grep -q "^model $T/direct_$type: $type," "$T/bench"; then
            echo "PASS gen_random_${type}_loads_in_bench"
        else echo "FAIL gen_random_${type}_loads_in_bench: $(tail -3 "$T/bench")"; fi
    else echo "FAIL gen_random_${type}_equals_quantize: $(cat "$T/err")"; fi
done

# tiny: hidden 64, FFN 160, 2 layers, 4 heads and 2 KV heads of 32, vocab
# 512, tied; a q8 row of c columns is ceil(c / 32) x 34 bytes
q8() { echo $(((($1 + 31) / 32) * 34)); }
layer=$((128 * $(q8 64) + 2 * 64 * $(q8 64) + 64 * $(q8 128) + 2 * 160 * $(q8 64) + 64 * $(q8 160) + 2 * (64 + 64 + 32 + 32)))
want=$((512 * $(q8 64) + 2 * layer + 2 * 64))
got=$("$BIN" gen-random --like tiny --type q8 --dry-run "$T/dry" | sed -n 's/.*, \([0-9]*\) bytes$/\1/p')
if [ "$got" = "$want" ] && [ ! -e "$T/dry" ]; then echo "PASS gen_random_q8_dry_run_bytes"
else echo "FAIL gen_random_q8_dry_run_bytes: got '$got', want $want"; fi

"$BIN" gen-random --like modernbert-base --type q8 "$T/enc" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "encoder shape" "$T/err" && [ ! -e "$T/enc" ]; then
    echo "PASS gen_random_type_refuses_an_encoder"
else echo "FAIL gen_random_type_refuses_an_encoder: exit $rc: $(cat "$T/err")"; fi
