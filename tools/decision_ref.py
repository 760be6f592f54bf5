#!/usr/bin/env python3
"""PyTorch reference of nectar's decision model (docs/decision.md).

A decision-model folder is a ModernBERT encoder folder (config.json, model.safetensors,
tokenizer.json) plus decision.json (the head's config) and decision.safetensors (its
weights). The computation, per row of a padded batch:

    h      = encoder(ids, mask).last_hidden_state          (after the encoder's final norm)
    h      = h + type_embeddings[type_ids]                 (type id: markers seen so far, 0..K)
    h      = head_layer_H(... head_layer_1(h))             (H transformer layers, key padding mask)
    z_k    = scorer(h[marker_k])                           (Linear D->S, GELU, Linear S->1)
    p_raw  = softmax(z)                 marker probabilities
    p_cal  = softmax(z / T)             calibrated probabilities
    f      = concat of action_features in their order: "raw_probs" -> p_raw, "cls" -> h[0]
                                        (features from the RAW probabilities, not p_cal)
    a      = softmax(action(f))         action probabilities (Linear F->Ha, GELU, Linear Ha->A)

Used as a module by tools/make_decision_fixtures.py (parity fixtures) and
tools/train_snake.py (the Snake model); it is the parity reference of the C engine.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import ModernBertModel

FORMAT = "nectar-decision-1"


def head_config(hidden_size, num_markers=4, marker_token_ids=(), head_layers=2, heads=2,
                intermediate=None, norm="post", scorer_hidden=16, features=("raw_probs", "cls"),
                action_hidden=16, num_actions=4, temperature=1.0, eps=1e-5, **labels):
    """decision.json as a dict (see docs/decision.md for every field)."""
    c = {"format": FORMAT, "hidden_size": hidden_size, "num_markers": num_markers,
         "marker_token_ids": list(marker_token_ids), "type_vocab_size": num_markers + 1,
         "head_layers": head_layers, "head_attention_heads": heads,
         "head_intermediate_size": intermediate or 4 * hidden_size, "head_norm": norm,
         "head_norm_eps": eps, "head_activation": "gelu", "scorer_hidden_size": scorer_hidden,
         "action_features": list(features), "action_hidden_size": action_hidden,
         "num_actions": num_actions, "temperature": temperature}
    c.update(labels)
    return c


def feature_width(c):
    return (c["num_markers"] if "raw_probs" in c["action_features"] else 0) + \
        (c["hidden_size"] if "cls" in c["action_features"] else 0)


class HeadLayer(nn.Module):
    """One heavy head layer: multi-head self-attention (fused QKV with bias, no positional
    terms: the encoder's output carries position) and a GELU MLP, each with a residual and a
    LayerNorm (with bias) before ("pre") or after the residual ("post")."""

    def __init__(self, c):
        super().__init__()
        d, i = c["hidden_size"], c["head_intermediate_size"]
        self.heads, self.pre = c["head_attention_heads"], c["head_norm"] == "pre"
        self.attn_norm = nn.LayerNorm(d, eps=c["head_norm_eps"])
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.mlp_norm = nn.LayerNorm(d, eps=c["head_norm_eps"])
        self.mlp_in = nn.Linear(d, i)
        self.mlp_out = nn.Linear(i, d)

    def attention(self, x, keymask):
        b, l, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(x).view(b, l, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-1, -2) / math.sqrt(hd)
        s = s.masked_fill(~keymask[:, None, None, :], float("-inf"))
        o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(b, l, d)
        return self.out(o)

    def mlp(self, x):
        return self.mlp_out(F.gelu(self.mlp_in(x)))

    def forward(self, x, keymask):
        if self.pre:
            x = x + self.attention(self.attn_norm(x), keymask)
            return x + self.mlp(self.mlp_norm(x))
        x = self.attn_norm(x + self.attention(x, keymask))
        return self.mlp_norm(x + self.mlp(x))


class DecisionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        d = c["hidden_size"]
        self.type_embeddings = nn.Parameter(torch.zeros(c["type_vocab_size"], d))
        self.head = nn.ModuleList([HeadLayer(c) for _ in range(c["head_layers"])])
        self.scorer = nn.Sequential(nn.Linear(d, c["scorer_hidden_size"]), nn.GELU(),
                                    nn.Linear(c["scorer_hidden_size"], 1))
        self.action = nn.Sequential(nn.Linear(feature_width(c), c["action_hidden_size"]), nn.GELU(),
                                    nn.Linear(c["action_hidden_size"], c["num_actions"]))

    def forward(self, h, mask, type_ids, markers):
        """h [B, L, D] final encoder states; mask, type_ids [B, L]; markers [B, K] positions."""
        c = self.c
        keymask = mask.bool()
        x = h + self.type_embeddings[type_ids]
        for layer in self.head:
            x = layer(x, keymask)
        sel = torch.gather(x, 1, markers[..., None].expand(-1, -1, x.shape[-1]))
        z = self.scorer(sel)[..., 0]
        raw = torch.softmax(z, -1)
        cal = torch.softmax(z / c["temperature"], -1)
        feats = [raw if f == "raw_probs" else x[:, 0] for f in c["action_features"]]
        a = self.action(torch.cat(feats, -1))
        return {"marker_logits": z, "marker_probs": raw, "calibrated": cal, "action_logits": a,
                "action_probs": torch.softmax(a, -1)}


def marker_positions(c, ids, mask):
    """[B, K] marker positions by decision.json's marker_token_ids: K ids (marker k is the first
    occurrence of id k) or one id (marker k is its k-th occurrence). Raises on a missing one."""
    K, mids = c["num_markers"], c["marker_token_ids"]
    out = torch.zeros(ids.shape[0], K, dtype=torch.long)
    for b in range(ids.shape[0]):
        real = [t for t in range(ids.shape[1]) if mask[b, t]]
        for k in range(K):
            if len(mids) == 1:
                hits = [t for t in real if int(ids[b, t]) == mids[0]]
                pos = hits[k] if k < len(hits) else None
            else:
                pos = next((t for t in real if int(ids[b, t]) == mids[k]), None)
            if pos is None:
                raise ValueError("row %d has no marker %d" % (b, k))
            out[b, k] = pos
    return out


def type_ids_from_markers(markers, mask):
    """type id of a token = the number of markers at or before it (0 before the first);
    0 at padding."""
    B, L = mask.shape
    t = torch.arange(L)[None, :, None]
    return ((markers[:, None, :] <= t).sum(-1) * mask).long()


class DecisionModel(nn.Module):
    def __init__(self, encoder, c):
        super().__init__()
        self.encoder, self.head, self.c = encoder, DecisionHead(c), c

    def forward(self, ids, mask, markers=None, type_ids=None):
        ids, mask = torch.as_tensor(ids).long(), torch.as_tensor(mask).long()
        if markers is None:
            markers = marker_positions(self.c, ids, mask)
        if type_ids is None:
            type_ids = type_ids_from_markers(markers, mask)
        h = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        out = self.head(h.float(), mask, type_ids, markers)
        out["markers"], out["type_ids"] = markers, type_ids
        return out


def save(model, d, encoder_dtype=torch.float32):
    """Writes the folder (the tokenizer is the caller's)."""
    os.makedirs(d, exist_ok=True)
    model.encoder.to(encoder_dtype).save_pretrained(d)
    model.encoder.float()
    with open(os.path.join(d, "decision.json"), "w") as f:
        json.dump(model.c, f, indent=2)
        f.write("\n")
    sd = {k: v.detach().float().contiguous() for k, v in model.head.state_dict().items()}
    save_file(sd, os.path.join(d, "decision.safetensors"))


def load(d):
    """The folder back, in float32 with eager attention (the parity reference)."""
    c = json.load(open(os.path.join(d, "decision.json")))
    enc = ModernBertModel.from_pretrained(d, attn_implementation="eager", dtype=torch.float32).eval()
    m = DecisionModel(enc, c).eval()
    m.head.load_state_dict(load_file(os.path.join(d, "decision.safetensors")))
    return m


def randomize_head(head, scale=0.3):
    """Random weights with non-trivial norms and biases (so a wrong norm placement shows)."""
    with torch.no_grad():
        for n, p in head.named_parameters():
            if n.endswith("weight") and p.dim() == 1:
                p.copy_(1 + scale * torch.randn_like(p))
            elif p.dim() == 1 or n == "type_embeddings":
                p.copy_(scale * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / math.sqrt(p.shape[1]))
        for out in (head.scorer[2], head.action[2]):  # spread the probabilities apart
            out.weight.mul_(4)


def main():
    """`decision_ref.py --random OUT --like DIR`: a random decision model at a real encoder shape
    (default mmBERT-base: N=22, D=768, I=1152, 12 heads; H=2 head layers with a 4D MLP) with
    DIR's tokenizer, markers, actions and features: the study's shape for timing (e.g.
    `nectar snake -m OUT` at B=3 L=64), not a player."""
    import argparse
    import shutil
    from transformers import ModernBertConfig
    ap = argparse.ArgumentParser()
    ap.add_argument("--random", required=True, metavar="OUT")
    ap.add_argument("--like", required=True, metavar="DIR")
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--intermediate", type=int, default=1152)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--head-layers", type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    src = json.load(open(os.path.join(a.like, "config.json")))
    c = json.load(open(os.path.join(a.like, "decision.json")))
    d = a.hidden
    cfg = ModernBertConfig(vocab_size=src["vocab_size"], hidden_size=d, intermediate_size=a.intermediate,
                           num_hidden_layers=a.layers, num_attention_heads=a.heads, local_attention=128,
                           max_position_embeddings=8192, pad_token_id=src["pad_token_id"],
                           cls_token_id=src["cls_token_id"], sep_token_id=src["sep_token_id"],
                           bos_token_id=src["cls_token_id"], eos_token_id=src["sep_token_id"],
                           global_attn_every_n_layers=3)
    c.update({"hidden_size": d, "head_layers": a.head_layers, "head_attention_heads": a.heads,
              "head_intermediate_size": 4 * d})
    m = DecisionModel(ModernBertModel(cfg), c)
    randomize_head(m.head)
    save(m, a.random, torch.bfloat16)
    shutil.copy(os.path.join(a.like, "tokenizer.json"), a.random)


if __name__ == "__main__":
    main()
