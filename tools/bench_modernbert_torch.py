#!/usr/bin/env python3
"""PyTorch baseline for the encoder CPU benchmark (not a test).

For a ModernBERT-family folder (e.g. from `nectar gen-random --like modernbert-base`):
  1. parity at the real shape: mean-pooled final hidden states of one long text
     (past the 128-token local window) from HF vs `nectar embed`, both fp32 math;
  2. latency of HF's forward (ModernBertModel + mean pooling, fp32, sdpa attention,
     torch.inference_mode) on random ids at the same shapes as `nectar embed --bench`,
     and the same for nectar, run one after the other in interleaved blocks.

Usage: python3 tools/bench_modernbert_torch.py DIR [--threads 2] [--runs 20]
       [--blocks 3] [--nectar build/nectar]
"""
import argparse
import os
import json
import subprocess
import time

import numpy as np
import torch
from transformers import ModernBertModel

SHAPES = [(1, 96), (3, 64)]


def torch_times(model, vocab, b, l, runs):
    g = np.random.default_rng(12345)
    ids = torch.tensor(g.integers(0, vocab, size=(b, l)), dtype=torch.long)
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        for _ in range(2):
            model(input_ids=ids, attention_mask=mask)
        out, cpu = [], []
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            h = model(input_ids=ids, attention_mask=mask).last_hidden_state
            h.mean(1)
            out.append((time.perf_counter() - t0) * 1e3 / b)
            cpu.append((time.process_time() - c0) * 1e3 / b)
    return out, cpu


def nectar_times(bin_, d, b, l, runs, threads):
    r = subprocess.run([bin_, "embed", "-m", d, "--bench", f"{b}x{l}", "--runs", str(runs), "-t",
                        str(threads)], capture_output=True, text=True, check=True)
    line = [x for x in r.stdout.splitlines() if x.startswith("B=")][0]
    f = line.replace(";", " ").split()
    return float(f[5]), float(f[8]), float(f[11]), float(f[18])


def summary(x):
    return np.mean(x), np.percentile(x, 50), np.percentile(x, 95)


def interleaved(a, name, baseline_times):
    """Runs the baseline (baseline_times(b, l, runs) -> (wall ms, cpu ms) per input) and
    `nectar embed --bench` one after the other in a.blocks blocks per shape, and prints both
    and their ratio."""
    for b, l in SHAPES:
        bw, bc, bblk, nm, n50, n95, nc = [], [], [], [], [], [], []
        for _ in range(a.blocks):
            w, c = baseline_times(b, l, a.runs)
            bw += w
            bc += c
            bblk.append(np.mean(c) / (np.mean(w) * a.threads))
            m, p50, p95, cpu = nectar_times(a.nectar, a.dir, b, l, a.runs, a.threads)
            nm.append(m), n50.append(p50), n95.append(p95), nc.append(cpu)
        bm, b50, b95 = summary(bw)
        # CPU share: the process's CPU time over wall time x threads (1.0: it had its
        # threads' cores all the time; less: other processes took them)
        nshare = [c / (m * a.threads) for m, c in zip(nm, nc)]
        print(f"B={b} L={l} per input, {a.threads} threads, {a.blocks} blocks x {a.runs} runs, "
              f"load average {os.getloadavg()[0]:.2f}:")
        print(f"  {name}: mean {bm:.2f} ms  p50 {b50:.2f}  p95 {b95:.2f}  cpu {np.mean(bc):.2f} ms  "
              f"CPU share {['%.0f%%' % (100 * x) for x in bblk]}")
        print(f"  nectar (block means): mean {np.mean(nm):.2f} ms  p50 {np.mean(n50):.2f}  "
              f"p95 {np.mean(n95):.2f}  cpu {np.mean(nc):.2f} ms  per-block means "
              f"{['%.1f' % x for x in nm]}  CPU share {['%.0f%%' % (100 * x) for x in nshare]}")
        print(f"  nectar / {name.split()[0]}: wall {np.mean(nm) / bm:.2f}, "
              f"CPU time {np.mean(nc) / np.mean(bc):.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--nectar", default="build/nectar")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = ModernBertModel.from_pretrained(a.dir, dtype=torch.float32, attn_implementation="sdpa").eval()
    vocab = model.config.vocab_size

    # parity at the real shape (needs tokenizer.json in the folder)
    try:
        from tokenizers import Tokenizer
        if not os.path.exists(a.dir + "/tokenizer.json"):  # tokenizers raises its own type
            raise FileNotFoundError(a.dir + "/tokenizer.json")
        tok = Tokenizer.from_file(a.dir + "/tokenizer.json")
        text = "The quick brown fox jumps over the lazy dog near Paris, the capital of France. " * 5
        ids = tok.encode(text).ids
        with torch.inference_mode():
            ref = model(input_ids=torch.tensor([ids])).last_hidden_state.mean(1)[0].numpy()
        r = subprocess.run([a.nectar, "embed", "-m", a.dir, "-p", text, "--pooling", "mean",
                            "-t", str(a.threads)], capture_output=True, text=True, check=True)
        got = np.array(json.loads(r.stdout)["embeddings"][0])
        print(f"parity: {len(ids)} tokens, max |nectar - HF| of the mean-pooled vector "
              f"{np.abs(got - ref).max():.3g} (max |value| {np.abs(ref).max():.3g})")
    except FileNotFoundError:
        print("parity: skipped (no tokenizer.json)")

    interleaved(a, f"pytorch {torch.__version__}", lambda b, l, runs: torch_times(model, vocab, b, l, runs))

if __name__ == "__main__":
    main()
