#!/bin/sh
# `nectar mil run` end to end: numpy's result for a one-op program (bytes of
# the fp16 data equal numpy's, from tools/mil_goldens.py), a program reading
# weights from its model folder, and bad input (missing or misshapen inputs,
# unknown function, bad mode) failing with one line, a non-zero exit and no
# output folder.
NECTAR=${NECTAR_BIN:-build/nectar}
OPS=tests/fixtures/mil/ops
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# The data part of two .npy files (their last N bytes) is identical.
same_data() { # file-a, file-b, bytes
    tail -c "$3" "$1" >"$TMP/a" && tail -c "$3" "$2" >"$TMP/b" && cmp -s "$TMP/a" "$TMP/b"
}

d=$OPS/add_bcast
if "$NECTAR" mil run "$d/model.mil" --in x="$d/x.npy" --in y="$d/y.npy" --out "$TMP/o1" >"$TMP/log" 2>&1 &&
    same_data "$TMP/o1/z.npy" "$d/z.f16.npy" 60; then
    pass mil_run_fp16_matches_numpy_bytes
else fail mil_run_fp16_matches_numpy_bytes "$(cat "$TMP/log")"; fi

if "$NECTAR" mil run "$d/model.mil" --in x="$d/x.npy" --in y="$d/y.npy" --out "$TMP/o2" --mode fp32 \
    >"$TMP/log" 2>&1 && same_data "$TMP/o2/z.npy" "$d/z.f32.npy" 120; then
    pass mil_run_fp32_writes_fp32
else fail mil_run_fp32_writes_fp32 "$(cat "$TMP/log")"; fi

# weights from weights/weight.bin next to model.mil; two outputs
d=$OPS/constexpr_lut_to_dense_ios18_blob
if "$NECTAR" mil run "$d/model.mil" --fn main --in x="$d/x.npy" --out "$TMP/o3" >"$TMP/log" 2>&1 &&
    [ -f "$TMP/o3/z.npy" ] && [ -f "$TMP/o3/y.npy" ] && grep -q 'y: fp16 \[1, 3, 1, 2\]' "$TMP/log"; then
    pass mil_run_reads_blob_weights
else fail mil_run_reads_blob_weights "$(cat "$TMP/log")"; fi

bad() { # name, expected words in the message, args...
    name=$1 want=$2
    shift 2
    if "$NECTAR" mil run "$@" --out "$TMP/bad" >"$TMP/out" 2>"$TMP/err"; then
        fail "$name" "exit 0"
    elif [ -e "$TMP/bad" ]; then fail "$name" "output folder created"
    elif [ "$(wc -l <"$TMP/err")" -ne 1 ] || ! grep -q "$want" "$TMP/err"; then
        fail "$name" "message: $(cat "$TMP/err")"
    else pass "$name"; fi
}
d=$OPS/add_bcast
bad mil_run_missing_input_is_named "'y'" "$d/model.mil" --in x="$d/x.npy"
bad mil_run_wrong_shape_names_type "tensor<fp16, \[2, 1, 5\]>" "$d/model.mil" --in x="$d/y.npy" --in y="$d/y.npy"
bad mil_run_unknown_input_is_named "'w'" "$d/model.mil" --in w="$d/x.npy"
bad mil_run_unknown_function "'nope'" "$d/model.mil" --fn nope
bad mil_run_bad_mode "fp8" "$d/model.mil" --mode fp8
bad mil_run_missing_npy "nothere.npy" "$d/model.mil" --in x="$TMP/nothere.npy"
bad mil_run_missing_file "nothere.mil" "$TMP/nothere.mil"

# --trace names the op where fp16 overflows first (x*x of activations ~300)
d=tests/fixtures/mil/programs/rmsnorm_naive
if "$NECTAR" mil run "$d/model.mil" --in x="$d/x.npy" --out "$TMP/o4" --trace >"$TMP/log" 2>"$TMP/trace" &&
    grep -q "^mul 'sq' (.*model.mil:8) -> sq fp16 \[1, 64, 1, 32\] .*, [1-9][0-9]* inf, 0 nan" "$TMP/trace"; then
    pass mil_run_trace_shows_overflow
else fail mil_run_trace_shows_overflow "$(head -3 "$TMP/trace")"; fi
