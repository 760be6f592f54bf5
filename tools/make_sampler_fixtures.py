#!/usr/bin/env python3
"""Writes tests/fixtures/gen/sampler_cases.json: fixed logits, token histories
and sampling parameters with the filtered, renormalised distribution that the
C sampler (src/gen/sampler.c) must reproduce.

The reference is computed here with numpy, independently of the C code, and
cross-checked against Hugging Face transformers' own logits processors
(RepetitionPenalty -> Temperature -> TopK -> TopP -> MinP) when transformers
is importable. Presence/frequency penalties follow the OpenAI definition
(logit -= count * frequency + [count > 0] * presence), applied after the
repetition penalty as llama.cpp does.

Usage: python3 tools/make_sampler_fixtures.py [OUT]
"""
import json
import sys

import numpy as np

V = 40


def reference(logits, history, p):
    V = len(logits)
    x = logits.astype(np.float32).copy()
    ids, counts = np.unique(np.array(history, dtype=np.int64), return_counts=True)
    if len(ids):
        rp = np.float32(p["repeat_penalty"])
        sel = x[ids]
        sel = np.where(sel > 0, sel / rp, sel * rp).astype(np.float32)
        sel = sel - (counts.astype(np.float32) * np.float32(p["frequency_penalty"])
                     + np.float32(p["presence_penalty"]))
        x[ids] = sel.astype(np.float32)
    if p["temperature"] <= 0 or p["top_k"] == 1:
        out = np.zeros(V)
        out[int(np.argmax(x))] = 1.0
        return out
    x = (x / np.float32(p["temperature"])).astype(np.float64)
    keep = np.ones(V, dtype=bool)
    # order best-first, ties to the lower id
    order = sorted(range(V), key=lambda i: (-x[i], i))
    if 0 < p["top_k"] < V:
        keep[:] = False
        keep[order[: p["top_k"]]] = True
    if p["top_p"] < 1.0:
        ranked = [i for i in order if keep[i]]
        e = np.exp(x[ranked] - x[ranked].max())
        pr = e / e.sum()
        before = 0.0
        newkeep = np.zeros(V, dtype=bool)
        for k, i in enumerate(ranked):
            if k > 0 and before >= p["top_p"]:
                break
            newkeep[i] = True
            before += pr[k]
        keep = newkeep
    if p["min_p"] > 0:
        e = np.where(keep, np.exp(x - x[keep].max()), 0.0)
        pr = e / e.sum()
        keep = keep & (pr >= p["min_p"] * pr.max())
    e = np.where(keep, np.exp(x - x[keep].max()), 0.0)
    return e / e.sum()


def hf_check(logits, history, p, ref):
    """The same chain through transformers' processors (no presence/frequency)."""
    try:
        import torch
        from transformers.generation.logits_process import (
            MinPLogitsWarper, RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper,
            TopKLogitsWarper, TopPLogitsWarper)
    except ImportError:
        return
    if p["presence_penalty"] or p["frequency_penalty"] or p["temperature"] <= 0:
        return
    ids = torch.tensor([history or [0]], dtype=torch.long)
    s = torch.tensor(logits, dtype=torch.float32)[None]
    if p["repeat_penalty"] != 1.0 and history:
        s = RepetitionPenaltyLogitsProcessor(p["repeat_penalty"])(ids, s)
    if p["temperature"] != 1.0:
        s = TemperatureLogitsWarper(p["temperature"])(ids, s)
    if p["top_k"] > 0:
        s = TopKLogitsWarper(p["top_k"])(ids, s)
    if p["top_p"] < 1.0:
        s = TopPLogitsWarper(p["top_p"])(ids, s)
    if p["min_p"] > 0:
        s = MinPLogitsWarper(p["min_p"])(ids, s)
    hf = torch.softmax(s, dim=-1)[0].double().numpy()
    err = np.abs(hf - ref).max()
    assert err < 1e-5, f"numpy reference disagrees with transformers: {err}"


def params(**kw):
    p = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
             presence_penalty=0.0, frequency_penalty=0.0)
    p.update(kw)
    return p


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/gen/sampler_cases.json"
    rng = np.random.default_rng(1234)
    base = (rng.standard_normal(V) * 2.0).astype(np.float32)
    hist = [3, 3, 3, 7, 11, 11, int(np.argmax(base)), 25, 39, 0]
    cases = [
        ("plain_softmax", base, [], params()),
        ("temperature_0_5", base, [], params(temperature=0.5)),
        ("temperature_1_7", base, [], params(temperature=1.7)),
        ("top_k_5", base, [], params(top_k=5)),
        ("top_p_0_6", base, [], params(top_p=0.6)),
        ("min_p_0_1", base, [], params(min_p=0.1)),
        ("repeat_penalty_1_3", base, hist, params(repeat_penalty=1.3)),
        ("repeat_penalty_below_1", base, hist, params(repeat_penalty=0.8)),
        ("presence_frequency", base, hist, params(presence_penalty=0.7, frequency_penalty=0.4)),
        ("qwen_nonthinking", base, hist,
         params(temperature=0.7, top_k=20, top_p=0.8, min_p=0.0)),
        ("qwen_thinking", base, hist, params(temperature=0.6, top_k=20, top_p=0.95)),
        ("all_filters", base, hist,
         params(temperature=0.9, top_k=12, top_p=0.9, min_p=0.05, repeat_penalty=1.1,
                presence_penalty=0.2, frequency_penalty=0.1)),
        ("greedy_after_penalty", base, hist, params(temperature=0.0, repeat_penalty=2.0)),
        ("top_k_1_is_greedy", base, [], params(top_k=1)),
    ]
    # ties: equal logits are ordered by id, so top-k keeps the lower ids
    tie = np.full(V, -1.0, dtype=np.float32)
    tie[[5, 9, 17, 30]] = 2.0
    cases.append(("top_k_ties_keep_lower_ids", tie, [], params(top_k=2)))
    cases.append(("greedy_tie_lowest_id", tie, [], params(temperature=0.0)))

    # a wider vocabulary with a long tail: top-p alone must order thousands of
    # candidates (the C code prunes buckets of the tail first)
    wide = (rng.standard_normal(1500) * 3.0).astype(np.float32)
    cases.append(("top_p_0_9_wide_vocab", wide, [], params(top_p=0.9)))
    cases.append(("top_p_0_5_min_p_wide_vocab", wide, [5, 5, 17], params(
        temperature=0.8, top_p=0.5, min_p=0.02, repeat_penalty=1.2)))

    doc = {"vocab": V, "cases": []}
    for name, logits, history, p in cases:
        ref = reference(logits, history, p)
        if "ties" not in name:  # HF keeps every token tied with the k-th; we keep k
            hf_check(logits, history, p, ref)
        doc["cases"].append({
            "name": name,
            # shortest text that reads back as the same float32
            "logits": [float(str(np.float32(v))) for v in logits],
            "history": history,
            "params": p,
            "probs": [float(f"{v:.9g}") for v in ref],
        })
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out}: {len(cases)} cases")


if __name__ == "__main__":
    main()
