#!/usr/bin/env python3
"""Fixtures for the decision-model tests (tests/decide/).

Writes, under tests/fixtures/decision/, three decision-model folders (docs/decision.md) with
random weights made by tools/decision_ref.py, each with the tokenizer of a ModernBERT
fixture (tests/fixtures/modernbert/) plus marker tokens:
  dm_multi/    multilingual-style: sp-BPE tokenizer, vocabulary padded to 2048 rows (bf16
               encoder weights), D=32, 2 encoder layers, H=2 post-norm head layers, K=4
               distinct marker tokens <m1>..<m4>, features raw_probs + cls, T=1.7.
  dm_compact/  compact: byte-level tokenizer, D=32, 1 encoder layer, H=1 pre-norm layer,
               K=4 with one repeated marker token [OPT], features raw_probs only, T=0.8.
  dm_k3/       D=24 with 3 heads of 8, 2 encoder layers, H=2 pre-norm, K=3 distinct markers,
               6 actions, features cls + raw_probs, T=2.5.
Each has ref/: texts.txt (one input per line), input_ids.npy and attention_mask.npy (int32
[B, L], right-padded to L=48 with the pad id), markers.npy (int32 [B, K]), type_ids.npy
(int32 [B, L]) and the expected marker_logits.npy, marker_probs.npy, calibrated.npy
([B, K]) and action_probs.npy ([B, A]) (also as decide.txt: per input the marker,
calibrated and action probabilities, one number a line), computed by the model reloaded from the folder
in float32 (eager attention).

Run: build/venv/bin/python tools/make_decision_fixtures.py   (from the repository root)
"""
import os
import shutil
import sys

import numpy as np
import torch
from tokenizers import AddedToken, Tokenizer
from transformers import ModernBertConfig, ModernBertModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decision_ref as dr  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ROOT = os.path.join(REPO, "tests", "fixtures", "decision")
TOKS = os.path.join(REPO, "tests", "fixtures", "modernbert")
L = 48


def tokenizer(name, markers):
    tok = Tokenizer.from_file(os.path.join(TOKS, name, "tokenizer.json"))
    tok.add_special_tokens([AddedToken(m, special=True, normalized=False) for m in markers])
    return tok


def encoder(tok, vocab, d, inter, layers, heads, specials, seed):
    torch.manual_seed(seed)
    pad, cls, sep = (tok.token_to_id(s) for s in specials)
    cfg = ModernBertConfig(vocab_size=vocab, hidden_size=d, intermediate_size=inter,
                           num_hidden_layers=layers, num_attention_heads=heads, local_attention=16,
                           max_position_embeddings=128, pad_token_id=pad, cls_token_id=cls,
                           sep_token_id=sep, bos_token_id=cls, eos_token_id=sep,
                           initializer_range=0.2, global_attn_every_n_layers=2,
                           rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                                            "sliding_attention": {"rope_type": "default",
                                                                  "rope_theta": 10000.0}})
    m = ModernBertModel(cfg).eval()
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "norm" in n:
                p.add_(torch.randn_like(p) * 0.2)
    return m


def write(name, tok, enc, c, texts, enc_dtype=torch.float32):
    d = os.path.join(ROOT, name)
    model = dr.DecisionModel(enc, c).eval()
    dr.randomize_head(model.head)
    dr.save(model, d, enc_dtype)
    tok.save(os.path.join(d, "tokenizer.json"))
    model = dr.load(d)
    rows = [tok.encode(t, add_special_tokens=True).ids for t in texts]
    pad = enc.config.pad_token_id
    ids = np.full((len(rows), L), pad, dtype=np.int32)
    mask = np.zeros((len(rows), L), dtype=np.int32)
    for i, r in enumerate(rows):
        assert len(r) <= L, (name, texts[i], len(r))
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    with torch.no_grad():
        out = model(ids, mask)
    r = os.path.join(d, "ref")
    os.makedirs(r, exist_ok=True)
    with open(os.path.join(r, "texts.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    np.save(os.path.join(r, "input_ids.npy"), ids)
    np.save(os.path.join(r, "attention_mask.npy"), mask)
    np.save(os.path.join(r, "markers.npy"), out["markers"].numpy().astype(np.int32))
    np.save(os.path.join(r, "type_ids.npy"), out["type_ids"].numpy().astype(np.int32))
    for k in ("marker_logits", "marker_probs", "calibrated", "action_probs"):
        np.save(os.path.join(r, k + ".npy"), out[k].numpy().astype(np.float32))
    with open(os.path.join(r, "decide.txt"), "w") as f:  # for the shell test, in `decide`'s order
        for b in range(len(rows)):
            for k in ("marker_probs", "calibrated", "action_probs"):
                f.write("".join("%.8g\n" % v for v in out[k][b].tolist()))


def main():
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)

    marks = ["<m1>", "<m2>", "<m3>", "<m4>"]
    tok = tokenizer("tok_spbpe", marks)
    enc = encoder(tok, 2048, 32, 48, 2, 2, ("<pad>", "<bos>", "<eos>"), 1)
    c = dr.head_config(32, 4, [tok.token_to_id(m) for m in marks], head_layers=2, heads=2,
                       intermediate=64, norm="post", scorer_hidden=16, features=("raw_probs", "cls"),
                       action_hidden=12, num_actions=4, temperature=1.7,
                       action_labels=["answer", "ask", "wait", "refuse"])
    write("dm_multi", tok, enc, c,
          ["Which city? <m1> Paris <m2> Berlin <m3> Rome <m4> Tokyo",
           "Café ? <m1> café <m2> thé <m3> eau <m4> rien",
           "<m1> 日本語 <m2> English <m3> français <m4> español"], torch.bfloat16)

    tok = tokenizer("tok_bytelevel", ["[OPT]"])
    enc = encoder(tok, tok.get_vocab_size(), 32, 40, 1, 2, ("[PAD]", "[CLS]", "[SEP]"), 2)
    c = dr.head_config(32, 4, [tok.token_to_id("[OPT]")], head_layers=1, heads=4, intermediate=64,
                       norm="pre", scorer_hidden=8, features=("raw_probs",), action_hidden=8,
                       num_actions=4, temperature=0.8)
    write("dm_compact", tok, enc, c,
          ["[OPT] up [OPT] right [OPT] down [OPT] left",
           "snake 5 [OPT] ok [OPT] dead [OPT] ok far [OPT] ok near",
           "the quick brown fox [OPT] a [OPT] b [OPT] c [OPT] d"])

    marks = ["[A]", "[B]", "[C]"]
    tok = tokenizer("tok_bytelevel", marks)
    enc = encoder(tok, tok.get_vocab_size(), 24, 32, 2, 3, ("[PAD]", "[CLS]", "[SEP]"), 3)
    c = dr.head_config(24, 3, [tok.token_to_id(m) for m in marks], head_layers=2, heads=3,
                       intermediate=48, norm="pre", scorer_hidden=12, features=("cls", "raw_probs"),
                       action_hidden=20, num_actions=6, temperature=2.5)
    write("dm_k3", tok, enc, c,
          ["Paris is the capital of [A] France [B] Germany [C] Italy",
           "[C] first [B] second [A] third, out of order",
           "[A] x [B] y [C] z"])


if __name__ == "__main__":
    main()
