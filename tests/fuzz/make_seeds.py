#!/usr/bin/env python3
"""Writes the fuzz seed files derived from the repository's own fixtures
(tests/fixtures) into tests/fuzz/corpus/<target>/fx_*: small safetensors files
with the tensor names and dtypes of the tiny Qwen3 checkpoints, shrunk
tokenizer.json files with each fixture's pipeline, the config.json files,
weight.bin blobs, .npy files, OpenAI request bodies, MIL programs. Seeds stay
small (a few KB each) so that libFuzzer mutates them quickly. Deterministic:
rerunning rewrites the same bytes. Usage: python3 tests/fuzz/make_seeds.py
(from the repository root, after `make`: the quantized-folder seeds are
written by build/nectar quantize). The fx_*.mil seeds of fuzz_mil_parse are the
fixture programs libFuzzer's -merge kept (see tests/fuzz/README.md); this
script only copies the small ones into fuzz_mil_interp's pool when asked with
--mil-pool DIR."""
import glob
import json
import os
import shutil
import struct
import sys

FIX = "tests/fixtures"
OUT = "tests/fuzz/corpus"


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "fx_" + name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# --- safetensors -----------------------------------------------------------
ST_SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
           "I8": 1, "U8": 1, "U16": 2, "U32": 4, "U64": 8, "BOOL": 1,
           "F8_E4M3": 1, "F8_E5M2": 1}


def safetensors(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape); data is a byte ramp."""
    header, off = {}, 0
    for name, dt, shape in tensors:
        n = ST_SIZE[dt]
        for s in shape:
            n *= s
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:  # the writers pad the header with spaces to 8 bytes
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + bytes(i & 0xFF for i in range(off))


def safetensors_seeds():
    raw = read(os.path.join(FIX, "qwen3/tiny_gqa2/model.safetensors"))
    (hlen,) = struct.unpack("<Q", raw[:8])
    real = json.loads(raw[8:8 + hlen])
    # the checkpoint's names and dtypes, with tiny shapes of the same rank
    names = sorted(k for k in real if k != "__metadata__")
    layer0 = [k for k in names if ".layers." not in k or ".layers.0." in k]
    small = [(k, real[k]["dtype"], [2] * len(real[k]["shape"])) for k in layer0]
    put("fuzz_safetensors", "qwen3_tiny_layer0.safetensors",
        safetensors(small, real.get("__metadata__", {"format": "pt"})))
    put("fuzz_safetensors", "all_dtypes.safetensors",
        safetensors([("t." + dt.lower(), dt, [2, 3]) for dt in ST_SIZE]))
    put("fuzz_safetensors", "scalar_empty.safetensors",
        safetensors([("scalar", "F32", []), ("empty", "F16", [0, 4]), ("vec", "I64", [3])],
                    {"format": "pt", "note": "x"}, pad=False))
    # the real header with its data cut off: every offset is out of range
    put("fuzz_safetensors", "qwen3_tiny_header_only.safetensors",
        raw[:8] + raw[8:8 + hlen])


# --- tokenizer.json --------------------------------------------------------
def shrink_tokenizer(tok, keep=48):
    """Keeps the pipeline (normalizer, pre_tokenizer, model type, decoder,
    post_processor, added tokens) and a small vocabulary: the first `keep`
    entries plus what the kept merges need."""
    tok = json.loads(json.dumps(tok))
    m = tok.get("model", {})
    v = m.get("vocab")
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: kv[1])[:keep]
        kept = dict(items)
        merges = []
        for mg in m.get("merges", []):
            a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
            if a in kept and b in kept and a + b in kept:
                merges.append(mg)
        # a few merges whose result we add, so BPE has work to do
        for mg in m.get("merges", [])[:16]:
            a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
            for piece in (a, b, a + b):
                if piece not in kept:
                    kept[piece] = len(kept)
            if mg not in merges:
                merges.append(mg)
        # ids must stay dense: renumber in order
        m["vocab"] = {k: i for i, k in enumerate(kept)}
        if "merges" in m:
            m["merges"] = merges
        n = len(kept)
        for i, a in enumerate(tok.get("added_tokens", [])):
            a["id"] = n + i
    elif isinstance(v, list):  # Unigram / SentencePiece-style
        m["vocab"] = v[:keep]
        n = len(m["vocab"])
        for i, a in enumerate(tok.get("added_tokens", [])):
            a["id"] = n + i
    if "unk_id" in m and isinstance(m["unk_id"], int) and m["unk_id"] >= keep:
        m["unk_id"] = 0
    return tok


def tokenizer_seeds():
    srcs = {
        "qwen3_tiny": "qwen3/tiny_gqa2/tokenizer.json",
        "qwenstyle": "tokenizer/qwenstyle/tokenizer.json",
        "gpt2style": "tokenizer/gpt2style/tokenizer.json",
        "mb_bytelevel": "modernbert/tok_bytelevel/tokenizer.json",
        "mb_llamasp": "modernbert/tok_llamasp/tokenizer.json",
        "mb_spbpe": "modernbert/tok_spbpe/tokenizer.json",
        "serve_fake": "serve/fake/tokenizer.json",
    }
    for name, rel in srcs.items():
        path = os.path.join(FIX, rel)
        if not os.path.exists(path):
            continue
        tok = shrink_tokenizer(json.loads(read(path)))
        put("fuzz_tokenizer_load", name + ".json",
            json.dumps(tok, ensure_ascii=False, separators=(",", ":")))


def encode_text_seeds():
    n = 0
    with open(os.path.join(FIX, "tokenizer/corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            text = rec.get("text") if isinstance(rec, dict) else None
            if not isinstance(text, str) or not text or len(text) > 400:
                continue
            put("fuzz_tokenizer_encode", "corpus_%02d.txt" % n, text)
            n += 1
            if n == 12:
                break


# --- config.json -----------------------------------------------------------
def config_seeds():
    for path in sorted(glob.glob(os.path.join(FIX, "qwen3/*/config.json"))):
        put("fuzz_bounds_config", os.path.basename(os.path.dirname(path)) + ".json", read(path))
    for path in sorted(glob.glob(os.path.join(FIX, "bench/*config*.json"))):
        put("fuzz_bounds_config", os.path.basename(path), read(path))
    for path in sorted(glob.glob(os.path.join(FIX, "modernbert/*/config.json"))):
        put("fuzz_modernbert_config", os.path.basename(os.path.dirname(path)) + ".json",
            read(path))


# --- weight.bin, npy -------------------------------------------------------
def blob_seeds():
    put("fuzz_mil_blob", "coremltools.bin", read(os.path.join(FIX, "mil_blob/coremltools.bin")))
    for path in sorted(glob.glob(os.path.join(FIX, "mil/ops/*/weights/weight.bin"))):
        if os.path.getsize(path) <= 4096:
            put("fuzz_mil_blob", os.path.basename(os.path.dirname(os.path.dirname(path))) + ".bin",
                read(path))


def npy(descr, shape, data, fortran=False, version=1):
    h = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False",
        "(" + "".join("%d," % s for s in shape) + ")" if len(shape) != 1 else "(%d,)" % shape[0])
    pre = 10 if version == 1 else 12
    h += " " * (-(pre + len(h) + 1) % 64) + "\n"
    lenfield = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + lenfield + h.encode("latin1") + data


def npy_seeds():
    for rel in ("mil/ops/band_part_window/z.f16.npy", "mil/ops/real_div_by_zero/z.f32.npy",
                "modernbert/mm_cls/ref/input_ids.npy", "modernbert/mm_cls/ref/logits.npy"):
        path = os.path.join(FIX, rel)
        if os.path.exists(path):
            put("fuzz_npy", rel.replace("/", "_"), read(path))
    put("fuzz_npy", "bool_2x2.npy", npy("|b1", [2, 2], bytes([0, 1, 1, 0])))
    put("fuzz_npy", "u8_fortran.npy", npy("|u1", [2, 3], bytes(range(6)), fortran=True))
    put("fuzz_npy", "i32_scalar_v2.npy", npy("<i4", [], struct.pack("<i", -7), version=2))
    put("fuzz_npy", "f8_empty.npy", npy("<f8", [0, 3], b""))
    put("fuzz_npy", "bigendian.npy", npy(">f4", [2], struct.pack(">ff", 1.0, 2.0)))


# --- OpenAI request bodies ---------------------------------------------------
def request_seeds():
    bodies = {
        "chat_tools.json": {
            "model": "m", "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": None, "reasoning_content": "r",
                 "tool_calls": [{"id": "c1", "type": "function",
                                 "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "42"}],
            "tools": [{"type": "function", "function": {
                "name": "f", "description": "d",
                "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}],
            "tool_choice": "auto", "response_format": {"type": "json_object"},
            "max_completion_tokens": 8, "stream": True,
            "stream_options": {"include_usage": True}},
        "chat_sampling.json": {
            "model": "m", "messages": [{"role": "developer", "content": "d"},
                                       {"role": "user", "content": "x"}],
            "temperature": 0.7, "top_p": 0.9, "top_k": 20, "min_p": 0.05, "seed": 3,
            "presence_penalty": 0.5, "frequency_penalty": 0.1, "repeat_penalty": 1.1,
            "stop": ["\n\n", "END"], "n": 1, "logprobs": True, "top_logprobs": 2,
            "logit_bias": {"5": -100}, "max_tokens": 16,
            "chat_template_kwargs": {"enable_thinking": False}},
        "completion_list.json": {
            "model": "m", "prompt": ["a", "b"], "echo": True, "stop": "x",
            "max_tokens": 4, "stream": False},
        "completion_ids.json": {"model": "m", "prompt": [[1, 2, 3]], "max_tokens": 1},
    }
    for name, b in bodies.items():
        put("fuzz_serve_request", name, json.dumps(b))


def chat_seeds():
    """cases.jsonl conversations in fuzz_chat_template's format: an options
    byte, then messages "role 0x1F content [0x1F reasoning]" joined by 0x1E."""
    with open(os.path.join(FIX, "chat/cases.jsonl"), encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            opt = (1 if case.get("add_generation_prompt") else 0) | \
                  (0 if case.get("enable_thinking", True) else 2)
            recs = []
            for m in case["messages"]:
                rec = m["role"] + "\x1f" + (m.get("content") or "")
                if m.get("reasoning_content") is not None:
                    rec += "\x1f" + m["reasoning_content"]
                recs.append(rec)
            put("fuzz_chat_template", case["name"] + ".txt",
                bytes([opt]) + "\x1e".join(recs).encode())


def serve_job_seeds():
    """The request bodies of fuzz_serve_request feed the job path too."""
    src = os.path.join(OUT, "fuzz_serve_request")
    for name in sorted(os.listdir(src)):
        put("fuzz_serve_job", "req_" + name.replace("fx_", ""), read(os.path.join(src, name)))


def fn(name, seq, ins, outs):
    io = lambda n, shape: {"name": n, "shape": shape, "dtype": "fp16"}
    return {"name": name, "seq": seq, "inputs": [io(*x) for x in ins],
            "outputs": [io(*x) for x in outs]}


def bind_seeds():
    """manifest.json, NUL, modelAttributes: the test's qkv/mlp functions of a
    D=64, 4x24 heads, 2 KV heads model against the reordered attributes
    fixture (they bind), and the fixture manifest against the identity
    attributes (they do not)."""
    man = json.loads(read(os.path.join(OUT, "fuzz_lower_manifest/small.json")))
    man["model"].update({"hidden_size": 64, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "head_dim": 24})
    man["checkpoint"]["dir"] = "tests/fixtures/qwen3/tiny_gqa4_tied"
    man["programs"][0]["functions"] = [
        fn("qkv_s32", 32, [("x", [1, 64, 1, 32]), ("rope_cos", [1, 1, 24, 32]),
                           ("rope_sin", [1, 1, 24, 32])],
           [("q", [1, 96, 1, 32]), ("k_new", [1, 48, 1, 32]), ("v_new", [1, 48, 1, 32])]),
        fn("mlp_s32", 32, [("x", [1, 64, 1, 32])], [("x_out", [1, 64, 1, 32])])]
    attrs = read(os.path.join(FIX, "ane/attrs_qkv_reordered.json"))
    put("fuzz_ane_bind", "qkv_mlp.bin", json.dumps(man).encode() + b"\0" + attrs)
    put("fuzz_ane_bind", "small_identity.bin",
        read(os.path.join(OUT, "fuzz_lower_manifest/small.json")) + b"\0" +
        read(os.path.join(FIX, "ane/attrs_identity.json")))


def bf16_bytes(n, seed):
    out, x = bytearray(), seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        f = ((x >> 40) / float(1 << 24) - 0.5) * 0.1
        out += struct.pack("<f", f)[2:]  # bf16: the high half of the fp32
    return bytes(out)


def quant_seeds(nectar):
    """A micro Qwen3 folder (1 layer, hidden 32, vocab 16; the config of the
    tiny fixtures with smaller numbers) quantized by `nectar quantize` to q8
    and q4: config.json, NUL, model.safetensors."""
    import subprocess
    import tempfile
    cfg = json.loads(read(os.path.join(FIX, "qwen3/tiny_gqa2/config.json")))
    cfg.update({"vocab_size": 16, "hidden_size": 32, "intermediate_size": 32,
                "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
                "head_dim": 16, "max_position_embeddings": 64, "tie_word_embeddings": True,
                "bos_token_id": 1, "eos_token_id": 2})
    H, I, V, D, nh, nkv = 32, 32, 16, 16, 2, 1
    shapes = [("model.embed_tokens.weight", [V, H]), ("model.norm.weight", [H]),
              ("model.layers.0.input_layernorm.weight", [H]),
              ("model.layers.0.post_attention_layernorm.weight", [H]),
              ("model.layers.0.self_attn.q_proj.weight", [nh * D, H]),
              ("model.layers.0.self_attn.k_proj.weight", [nkv * D, H]),
              ("model.layers.0.self_attn.v_proj.weight", [nkv * D, H]),
              ("model.layers.0.self_attn.o_proj.weight", [H, nh * D]),
              ("model.layers.0.self_attn.q_norm.weight", [D]),
              ("model.layers.0.self_attn.k_norm.weight", [D]),
              ("model.layers.0.mlp.gate_proj.weight", [I, H]),
              ("model.layers.0.mlp.up_proj.weight", [I, H]),
              ("model.layers.0.mlp.down_proj.weight", [H, I])]
    header, blob, off = {}, b"", 0
    for i, (name, shape) in enumerate(shapes):
        n = 1
        for d in shape:
            n *= d
        data = bf16_bytes(n, i + 1)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + len(data)]}
        blob += data
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "micro")
        os.mkdir(src)
        with open(os.path.join(src, "config.json"), "w") as f:
            json.dump(cfg, f)
        with open(os.path.join(src, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + blob)
        for t in ("q8", "q4"):
            dst = os.path.join(tmp, t)
            subprocess.run([nectar, "quantize", "-m", src, "--type", t, "-o", dst], check=True,
                           stdout=subprocess.DEVNULL)
            put("fuzz_quant_folder", "micro_%s.bin" % t,
                read(os.path.join(dst, "config.json")) + b"\0" +
                read(os.path.join(dst, "model.safetensors")))


def mil_pool(dest):
    """Copies every fixture MIL program into dest (the pool that libFuzzer's
    -merge picks fuzz_mil_parse's fx_*.mil seeds from)."""
    os.makedirs(dest, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(FIX, "**/*.mil"), recursive=True)):
        name = os.path.relpath(path, FIX).replace("/", "_")
        shutil.copy(path, os.path.join(dest, name))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--mil-pool":
        mil_pool(sys.argv[2])
        return
    safetensors_seeds()
    tokenizer_seeds()
    encode_text_seeds()
    config_seeds()
    blob_seeds()
    npy_seeds()
    request_seeds()
    chat_seeds()
    serve_job_seeds()
    bind_seeds()
    if os.path.exists("build/nectar"):
        quant_seeds("build/nectar")
    else:
        print("make_seeds: build/nectar missing: fuzz_quant_folder seeds not written")


if __name__ == "__main__":
    main()
