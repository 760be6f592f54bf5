#!/usr/bin/env python3
"""Train nectar's Snake decision model (models/snake/) on the CPU in minutes, by imitation
of the heuristic teacher of src/snake/snake.c.

1. Data: `nectar snake --teacher --dump` plays seeded games (a few random moves mixed in,
   --explore, so the data also holds states the teacher would not reach) and writes each
   tick as TEACHER_MOVE<TAB>TEXT, the text being the tick's encoding (docs/decision.md).
   The environment and the encoding exist once, in C; this script only learns.
2. Tokenizer: a ModernBERT-style byte-level BPE ([CLS] $A [SEP]) trained on those texts,
   with the four move markers [UP] [RIGHT] [DOWN] [LEFT] as special tokens.
3. Model: tools/decision_ref.py's decision model: a ModernBERT encoder (D=64, 2 layers) and
   the study's H=2 head layers, K=4 markers (one per move), 4 actions (the moves). Loss:
   cross-entropy of the marker logits and of the action head, both on the teacher's move.
4. Calibration: the temperature T minimising the validation NLL of softmax(z / T).
5. Saved with decision_ref.save (fp32), tokenizer.json beside it; README.md records the
   command, the data, the accuracy and the time.

Run (from the repository root, after `make`):
  build/venv/bin/python tools/train_snake.py [--out models/snake] [--games 250] [--epochs 4]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, \
    trainers
from transformers import ModernBertConfig, ModernBertModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decision_ref as dr  # noqa: E402

MARKERS = ["[UP]", "[RIGHT]", "[DOWN]", "[LEFT]"]
SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def play(nectar, games, seed, explore):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ticks.tsv")
        subprocess.run([nectar, "snake", "--teacher", "--rate", "0", "--games", str(games),
                        "--seed", str(seed), "--explore", str(explore), "--dump", path],
                       check=True, stdout=subprocess.DEVNULL)
        rows = [line.rstrip("\n").split("\t", 1) for line in open(path, encoding="utf-8")]
    return [t for _, t in rows], [int(m) for m, _ in rows]


def tokenizer(texts):
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[], show_progress=False)
    tok.train_from_iterator(sorted(set(texts)), trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS + MARKERS])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok


def encode(tok, texts, pad):
    rows = [tok.encode(t).ids for t in texts]
    L = max(len(r) for r in rows)
    assert L <= 64, "a tick's text is longer than L=64"
    ids = np.full((len(rows), L), pad, dtype=np.int64)
    mask = np.zeros((len(rows), L), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    return torch.tensor(ids), torch.tensor(mask)


def build(tok, seed):
    torch.manual_seed(seed)
    cfg = ModernBertConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=96,
                           num_hidden_layers=2, num_attention_heads=4, local_attention=64,
                           max_position_embeddings=64, pad_token_id=tok.token_to_id("[PAD]"),
                           cls_token_id=tok.token_to_id("[CLS]"), sep_token_id=tok.token_to_id("[SEP]"),
                           bos_token_id=tok.token_to_id("[CLS]"), eos_token_id=tok.token_to_id("[SEP]"),
                           global_attn_every_n_layers=1, initializer_range=0.05,
                           rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                            "sliding_attention": {"rope_type": "default",
                                                                  "rope_theta": 10000.0}})
    c = dr.head_config(64, 4, [tok.token_to_id(m) for m in MARKERS], head_layers=2, heads=4,
                       intermediate=256, norm="pre", scorer_hidden=32, features=("raw_probs", "cls"),
                       action_hidden=32, num_actions=4, temperature=1.0,
                       action_labels=["up", "right", "down", "left"])
    return dr.DecisionModel(ModernBertModel(cfg), c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/snake")
    ap.add_argument("--nectar", default="build/nectar")
    ap.add_argument("--games", type=int, default=250)
    ap.add_argument("--explore", type=float, default=0.03)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t0 = time.time()
    # training games use seeds far from the evaluation games (nectar snake --seed 1)
    texts, moves = play(a.nectar, a.games, 100000, a.explore)
    tok = tokenizer(texts)
    model = build(tok, a.seed)
    ids, mask = encode(tok, texts, model.encoder.config.pad_token_id)
    markers = dr.marker_positions(model.c, ids, mask)
    types = dr.type_ids_from_markers(markers, mask)
    y = torch.tensor(moves)
    g = torch.Generator().manual_seed(a.seed)
    perm = torch.randperm(len(y), generator=g)
    n_val = len(y) // 10
    val, tr = perm[:n_val], perm[n_val:]
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    steps = a.epochs * ((len(tr) + a.batch - 1) // a.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps)
    for ep in range(a.epochs):
        model.train()
        order = tr[torch.randperm(len(tr), generator=g)]
        total = 0.0
        for i in range(0, len(order), a.batch):
            b = order[i:i + a.batch]
            out = model(ids[b], mask[b], markers[b], types[b])
            z, act = out["marker_logits"], out["action_logits"]
            loss = F.cross_entropy(z, y[b]) + F.cross_entropy(act, y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(b)
        model.eval()
        with torch.no_grad():
            out = model(ids[val], mask[val], markers[val], types[val])
            z, act = out["marker_logits"], out["action_logits"]
        acc = (act.argmax(-1) == y[val]).float().mean().item()
        print("epoch %d: loss %.4f, validation action accuracy %.4f (%.0f s)"
              % (ep + 1, total / len(tr), acc, time.time() - t0), flush=True)
    # calibration: T minimising the validation NLL of the marker probabilities
    grid = [0.25 * 1.1 ** k for k in range(40)]
    nll = [F.cross_entropy(z / t, y[val]).item() for t in grid]
    model.c["temperature"] = round(grid[int(np.argmin(nll))], 4)
    model.head.c = model.c
    os.makedirs(a.out, exist_ok=True)
    dr.save(model, a.out)
    tok.save(os.path.join(a.out, "tokenizer.json"))
    info = {"games": a.games, "explore": a.explore, "ticks": len(y), "epochs": a.epochs,
            "validation_action_accuracy": round(acc, 4), "temperature": model.c["temperature"],
            "seconds": round(time.time() - t0)}
    print(json.dumps(info))
    with open(os.path.join(a.out, "training.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
