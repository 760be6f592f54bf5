#!/bin/sh
# The enumerated bucket form (nectar compile --bucket-form enumerated,
# docs/lowering.md): one function per kernel whose inputs are an
# EnumeratedShapes set of the buckets (`?` for S inside), so a layer holds 3
# functions instead of 9 (--kv-update host: qkv, attn, mlp per bucket). The
# manifest lists one entry per bucket and function; the checker passes it
# with 0 warnings, the printer and parser round-trip it, and the greedy text
# through the interpreter (--backend mil) is the cpu backend's (fp32 from
# the checkpoint) and the per-bucket form's, with a prompt that runs every
# bucket (128, 64 and 32-wide chunks). What it refuses is one line.
. "$(dirname "$0")/../common/sh_test.sh"
T="-t 1"
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP compile_enumerated: no python3"; exit 0; fi
E="$TMP/en.ane"
if ! "$BIN" compile -m models/demo -o "$E" $T --bucket-form enumerated --kv-update host \
    >/dev/null 2>"$TMP/ce"; then
    fail compile_enumerated "$(cat "$TMP/ce")"
    exit 0
fi
layers=$(ls -d "$E"/layer_* | wc -l)
if python3 - "$E" >"$TMP/py" 2>&1 <<'PY'; then
import json, os, re, sys
b = sys.argv[1]
m = json.load(open(os.path.join(b, "manifest.json")))
assert m["plan"]["forms"]["bucket_form"] == "enumerated"
buckets = m["plan"]["buckets"]
for p in m["programs"]:
    text = open(os.path.join(b, p["path"])).read()
    funcs = re.findall(r"^    func (\w+)<", text, re.M)
    if p.get("layer", -1) < 0:
        assert funcs == ["head_s32"], funcs
        continue
    assert funcs == ["qkv", "attn", "mlp"], funcs
    assert text.count("EnumeratedShapes") == 3 and "tensor<fp16, [1, 256, 1, ?]> x" in text
    # one entry per bucket and function, buckets outer, the `?` read as S
    want = [(f, s) for s in buckets for f in funcs]
    assert [(f["name"], f["seq"]) for f in p["functions"]] == want, p["functions"]
    for f in p["functions"]:
        x = [i for i in f["inputs"] if i["name"] == "x"][0]
        assert x["shape"][3] == f["seq"], f
print(len(m["programs"]))
PY
    pass "enumerated_programs_hold_one_function_per_kernel ($layers layers x 3, entries per bucket)"
else
    fail enumerated_programs_hold_one_function_per_kernel "$(cat "$TMP/py")"
fi
if grep -q "16 functions" "$TMP/ce"; then
    pass compile_counts_functions_not_entries
else
    fail compile_counts_functions_not_entries "$(cat "$TMP/ce")"
fi

if "$BIN" mil check --target ane "$E" >"$TMP/o" 2>&1 && grep -q "0 errors, 0 warnings" "$TMP/o"; then
    pass enumerated_bundle_is_clean_by_the_ane_rules
else
    fail enumerated_bundle_is_clean_by_the_ane_rules "$(tail -5 "$TMP/o")"
fi
"$BIN" mil fmt "$E/layer_00/model.mil" -o "$TMP/f1.mil" 2>"$TMP/e1"
"$BIN" mil fmt "$TMP/f1.mil" -o "$TMP/f2.mil" 2>>"$TMP/e1"
if cmp -s "$E/layer_00/model.mil" "$TMP/f1.mil" && cmp -s "$TMP/f1.mil" "$TMP/f2.mil"; then
    pass enumerated_program_print_parse_print_identical
else
    fail enumerated_program_print_parse_print_identical "$(cat "$TMP/e1")"
fi

# greedy text: the cpu backend's, and the per-bucket form's through the interpreter
"$BIN" compile -m models/demo -o "$TMP/pb.ane" $T --kv-update host >/dev/null 2>&1
LONG=$(python3 -c "print(' '.join('word%d' % i for i in range(80)))")
ok=1
for prompt in "In the beginning" "$LONG"; do
    n=64
    [ "$prompt" = "$LONG" ] && n=16
    "$BIN" run $T -m models/demo -p "$prompt" --temp 0 -n $n >"$TMP/cpu" 2>/dev/null
    "$BIN" run $T --backend mil -m "$E" -p "$prompt" --temp 0 -n $n >"$TMP/en" 2>"$TMP/ee" || ok=0
    "$BIN" run $T --backend mil -m "$TMP/pb.ane" -p "$prompt" --temp 0 -n $n >"$TMP/pb" 2>/dev/null
    cmp -s "$TMP/cpu" "$TMP/en" && cmp -s "$TMP/pb" "$TMP/en" && [ -s "$TMP/en" ] || ok=0
done
ntok=$("$BIN" tokenize -m models/demo -p "$LONG" | wc -w)
if [ $ok = 1 ] && [ "$ntok" -gt 224 ]; then
    pass "enumerated_mil_equals_cpu_and_per_bucket (64 tokens; a $ntok-token prompt through every bucket)"
else
    fail enumerated_mil_equals_cpu_and_per_bucket "$(tail -3 "$TMP/ee")"
fi

# the ane runtime on the fake device: the fake describes procedures by
# static shapes, so it refuses each enumerated function and the ladder runs
# them on the CPU (the MIL interpreter on the same program): the cpu's text
NECTAR_ANE_CPU=interp "$BIN" run $T --backend ane --ane-device fake -m "$E" -p "In the beginning" --temp 0 -n 64 \
    >"$TMP/en" 2>"$TMP/ee"
"$BIN" run $T -m models/demo -p "In the beginning" --temp 0 -n 64 >"$TMP/cpu" 2>/dev/null
if cmp -s "$TMP/en" "$TMP/cpu" && grep -q "layers 0-$((layers - 1)): 0/$((layers * 9)) kernels on the ANE" "$TMP/ee" &&
    grep -q "shapes must be static" "$TMP/ee"; then
    pass enumerated_ane_fake_equals_cpu_through_the_cpu_rung
else
    fail enumerated_ane_fake_equals_cpu_through_the_cpu_rung "$(head -c 500 "$TMP/ee")"
fi

# the grouped attention form (G = 4): its reshapes of G*S infer S
G4=tests/fixtures/qwen3/tiny_gqa4_tied
"$BIN" compile -m $G4 -o "$TMP/g.ane" $T --kv-update host --attention grouped \
    --bucket-form enumerated >/dev/null 2>&1
"$BIN" compile -m $G4 -o "$TMP/gb.ane" $T --kv-update host --attention grouped >/dev/null 2>&1
# ctx 128: a prompt of 81 tokens, a 64-wide and a 32-wide chunk
MID=$(python3 -c "print(' '.join('word%d' % i for i in range(30)))")
"$BIN" run $T --backend mil -m "$TMP/g.ane" -p "$MID" --temp 0 -n 24 >"$TMP/g" 2>"$TMP/ge"
"$BIN" run $T --backend mil -m "$TMP/gb.ane" -p "$MID" --temp 0 -n 24 >"$TMP/gb" 2>/dev/null
if [ -s "$TMP/g" ] && cmp -s "$TMP/g" "$TMP/gb" && grep -q "16, ?]> q_groups" "$TMP/g.ane/layer_00/model.mil"; then
    pass enumerated_grouped_attention_equals_per_bucket
else
    fail enumerated_grouped_attention_equals_per_bucket "$(tail -2 "$TMP/ge")"
fi

# refusals: one line, no bundle
check_refused() { # label, grep pattern, compile args...
    label=$1 pat=$2
    shift 2
    if ! "$BIN" compile -o "$TMP/x.ane" $T "$@" >"$TMP/o" 2>"$TMP/e" &&
        [ "$(wc -l <"$TMP/e")" -eq 1 ] && grep -q -- "$pat" "$TMP/e" && [ ! -e "$TMP/x.ane" ]; then
        pass "$label"
    else
        fail "$label" "$(cat "$TMP/e")"
    fi
}
check_refused enumerated_without_host_kv_is_one_line "takes --kv-update host (the onehot spread" \
    -m models/demo --bucket-form enumerated
check_refused enumerated_qwen35_is_one_line "Qwen3 and Llama layers only" \
    -m tests/fixtures/qwen35/tiny_eos_mid --bucket-form enumerated --kv-update host
