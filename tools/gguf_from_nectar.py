#!/usr/bin/env python3
"""A GGUF file for llama.cpp from a nectar q8 or q4 Qwen3 folder, with the
very same weight bytes (no float copy, no requantization).

nectar's q8 block is llama.cpp's Q8_0 and its q4 block is Q4_0, byte for
byte (an fp16 scale, then 32 int8 codes; or the scale, then 16 bytes holding
weight i in the low nibble and i + 16 in the high one: docs/performance.md,
"Quantized model folders"), and a row is ceil(cols / 32) blocks in both. So
every matrix is copied as stored: Q8_0 or Q4_0 (a "pure" file: embedding and
LM head too, like `llama-quantize --pure`); the norms become F32 (exact from
bf16/f16), as convert_hf_to_gguf.py writes them. The tokenizer and model
metadata are llama.cpp's own: its convert_hf_to_gguf.py is run with
--vocab-only on a folder holding only the config and tokenizer files, and
every key of that file is copied. Qwen3's q/k rows are not permuted by the
converter (llama.cpp's Qwen3 uses NeoX RoPE), so rows go in unchanged.

Tensors are read through numpy memory maps and written one at a time, so
memory stays small whatever the model's size. --check reads the written file
back with gguf-py and compares every tensor's bytes with the folder's.

usage: python tools/gguf_from_nectar.py NECTAR_DIR OUT.gguf --llama-src DIR [--check]
  DIR: llama.cpp's source (convert_hf_to_gguf.py, gguf-py/); default
       $LLAMA_CPP_SRC. The converter needs torch, numpy, transformers and
       sentencepiece in this Python.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                   "generation_config.json", "chat_template.jinja", "special_tokens_map.json")


def die(msg):
    print(f"gguf_from_nectar: {msg}", file=sys.stderr)
    sys.exit(1)


def safetensors_tensors(folder):
    """(name, dtype, shape, file, offset, nbytes) of every tensor, in file order."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = []
    for name in files:
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            (hlen,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(hlen))
        header.pop("__metadata__", None)
        for tname, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            a, b = t["data_offsets"]
            out.append((tname, t["dtype"], t["shape"], path, 8 + hlen + a, b - a))
    return out


def tensor_bytes(path, offset, nbytes):
    return np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(nbytes,))


def as_f32(dtype, raw):
    if dtype == "F32":
        return raw.view(np.float32)
    if dtype == "F16":
        return raw.view(np.float16).astype(np.float32)
    if dtype == "BF16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    die(f"unexpected 1-D tensor dtype {dtype}")


def vocab_gguf(folder, llama_src, work):
    """llama.cpp's metadata for this config and tokenizer (--vocab-only)."""
    meta_dir = os.path.join(work, "meta")
    os.mkdir(meta_dir)
    shutil.copy(os.path.join(folder, "config.json"), meta_dir)
    for f in TOKENIZER_FILES:
        if os.path.exists(os.path.join(folder, f)):
            shutil.copy(os.path.join(folder, f), meta_dir)
    out = os.path.join(work, "vocab.gguf")
    env = dict(os.environ, PYTHONPATH=os.path.join(llama_src, "gguf-py"))
    r = subprocess.run([sys.executable, os.path.join(llama_src, "convert_hf_to_gguf.py"), meta_dir,
                        "--vocab-only", "--outfile", out], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        die("convert_hf_to_gguf.py --vocab-only failed:\n" + r.stderr[-2000:])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("out")
    ap.add_argument("--llama-src", default=os.environ.get("LLAMA_CPP_SRC"))
    ap.add_argument("--check", action="store_true", help="read the file back and compare bytes")
    a = ap.parse_args()
    if not a.llama_src or not os.path.exists(os.path.join(a.llama_src, "convert_hf_to_gguf.py")):
        die("--llama-src DIR: llama.cpp's source folder (with convert_hf_to_gguf.py) is needed")
    sys.path.insert(0, os.path.join(a.llama_src, "gguf-py"))
    import gguf  # noqa: E402 (from the llama.cpp source given)

    with open(os.path.join(a.folder, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "qwen3":
        die(f"{a.folder}/config.json: model_type {cfg.get('model_type')!r}; only qwen3 is supported")
    hidden, n_layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    tensors = safetensors_tensors(a.folder)
    embed = [t for t in tensors if t[0] == "model.embed_tokens.weight"]
    if not embed or embed[0][1] != "U8":
        die(f"{a.folder}: not a nectar q8/q4 folder (model.embed_tokens.weight is not U8 blocks)")
    row_bytes = embed[0][2][1]
    if row_bytes == (hidden + 31) // 32 * 34:
        qtype, ftype, block = gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0, 34
    elif row_bytes == (hidden + 31) // 32 * 18:
        qtype, ftype, block = gguf.GGMLQuantizationType.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0, 18
    else:
        die(f"{a.folder}: embedding rows of {row_bytes} bytes are neither q8 nor q4 of {hidden}")

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, n_layers)
    try:
        with tempfile.TemporaryDirectory() as work:
            reader = gguf.GGUFReader(vocab_gguf(a.folder, a.llama_src, work))
            writer = gguf.GGUFWriter(a.out + ".tmp", "qwen3")
            for field in reader.fields.values():
                if (field.name.startswith("GGUF.") or field.name in
                        (gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.FILE_TYPE)):
                    continue
                vtype = field.types[0]
                sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
                writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
            writer.add_file_type(ftype)
            plan = []
            for name, dtype, shape, path, offset, nbytes in tensors:
                gname = names.get_name(name, try_suffixes=(".weight", ".bias"))
                if gname is None:
                    die(f"{name}: no GGUF name for this tensor")
                if dtype == "U8" and len(shape) == 2:
                    if shape[1] % block:
                        die(f"{name}: rows of {shape[1]} bytes are not {block}-byte blocks")
                    writer.add_tensor_info(gname, shape, np.dtype(np.uint8), nbytes, raw_dtype=qtype)
                    plan.append((gname, None, path, offset, nbytes))
                elif len(shape) == 1:
                    writer.add_tensor_info(gname, shape, np.dtype(np.float32), shape[0] * 4)
                    plan.append((gname, dtype, path, offset, nbytes))
                else:
                    die(f"{name}: {dtype} {shape} is neither q8/q4 blocks nor a norm")
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_ti_data_to_file()
            for gname, dtype, path, offset, nbytes in plan:
                raw = tensor_bytes(path, offset, nbytes)
                writer.write_tensor_data(raw if dtype is None else as_f32(dtype, raw))
            writer.close()
    except BaseException:  # die(), an error, ^C: no partial output is left
        if os.path.exists(a.out + ".tmp"):
            os.remove(a.out + ".tmp")
        raise
    os.replace(a.out + ".tmp", a.out)
    print(f"wrote {a.out}: {len(plan)} tensors, {qtype.name}, {os.path.getsize(a.out) / 1e9:.2f} GB")

    if a.check:
        back = {t.name: t for t in gguf.GGUFReader(a.out).tensors}
        for gname, dtype, path, offset, nbytes in plan:
            t = back[gname]
            raw = tensor_bytes(path, offset, nbytes)
            want = raw if dtype is None else as_f32(dtype, raw).view(np.uint8)
            got = np.asarray(t.data).reshape(-1).view(np.uint8)
            if t.tensor_type != (qtype if dtype is None else gguf.GGMLQuantizationType.F32) or \
                    got.size != want.size or not np.array_equal(got, want):
                die(f"{gname}: the GGUF bytes differ from the folder's")
        print(f"check: all {len(plan)} tensors byte-identical to the folder's")


if __name__ == "__main__":
    main()
