"""A target/draft pair that agrees, for measuring speculative decoding on
random weights (docs/speculative.md). Random weights give nearly flat logits,
so a quantized copy of the target as the draft disagrees with it almost
always (q4) and costs too much when it agrees (q8: half the target). This
builds the pair the issue asks for, "a small draft with shared layers":

  target: SRC (any Qwen3/Llama folder, e.g. `nectar gen-random --like
          qwen3-0.6b`) with every layer from KEEP on contributing nothing
          to the residual stream (o_proj and down_proj zeroed); it still
          reads and runs all its weights, so it costs what SRC costs;
  draft:  SRC's embedding, first KEEP layers, final norm and head.

The zeroed layers add exact zeros, so the draft's logits are the target's
up to the kernels' rounding: the draft agrees nearly always, at the cost of
KEEP layers plus the head.

usage: make_spec_pair.py SRC TARGET_OUT DRAFT_OUT [--keep N]
"""
import argparse
import json
import os
import re
import shutil

import torch
from safetensors.torch import load_file, save_file


def copy_side_files(src, out):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(src):
        if f != "model.safetensors" and os.path.isfile(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), os.path.join(out, f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("target_out")
    ap.add_argument("draft_out")
    ap.add_argument("--keep", type=int, default=4)
    a = ap.parse_args()
    w = load_file(os.path.join(a.src, "model.safetensors"))
    layer = re.compile(r"model\.layers\.(\d+)\.")

    target = {}
    for name, t in w.items():
        m = layer.match(name)
        if m and int(m.group(1)) >= a.keep and (
                name.endswith("self_attn.o_proj.weight") or name.endswith("mlp.down_proj.weight")):
            t = torch.zeros_like(t)
        target[name] = t
    copy_side_files(a.src, a.target_out)
    save_file(target, os.path.join(a.target_out, "model.safetensors"), metadata={"format": "pt"})

    draft = {n: t for n, t in w.items() if not (layer.match(n) and int(layer.match(n).group(1)) >= a.keep)}
    copy_side_files(a.src, a.draft_out)
    save_file(draft, os.path.join(a.draft_out, "model.safetensors"), metadata={"format": "pt"})
    cfg_path = os.path.join(a.draft_out, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["num_hidden_layers"] = a.keep
    cfg["max_window_layers"] = min(cfg.get("max_window_layers", a.keep), a.keep)
    if "layer_types" in cfg:
        cfg["layer_types"] = cfg["layer_types"][:a.keep]
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    print("target %s (layers %d.. add nothing), draft %s (%d layers)" %
          (a.target_out, a.keep, a.draft_out, a.keep))


if __name__ == "__main__":
    main()
