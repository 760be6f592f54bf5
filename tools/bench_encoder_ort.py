#!/usr/bin/env python3
"""ONNX Runtime baseline for the encoder CPU benchmark (not a test).

For a ModernBERT-family folder (e.g. from `nectar gen-random --like modernbert-base`):
  1. exports HF's ModernBertModel + mean pooling (fp32, eager attention) to ONNX with
     torch.onnx.export (batch and length dynamic) and checks ONNX Runtime's output
     against PyTorch's on one random batch;
  2. latency of ONNX Runtime (CPU provider, all graph optimizations, intra-op threads
     = --threads) on random ids at the shapes of `nectar embed --bench`, and the same
     for nectar, run one after the other in interleaved blocks, with the CPU time of
     each (per input).

Usage: python3 tools/bench_encoder_ort.py DIR [--threads 2] [--runs 20] [--blocks 3]
       [--nectar build/nectar] [--onnx /tmp/modernbert.onnx]
Needs onnxruntime, onnx, torch, transformers (pip).
"""
import argparse
import os
import sys
import time

import numpy as np
import onnxruntime as ort
import torch
from transformers import ModernBertModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_modernbert_torch import interleaved  # noqa: E402


class Pooled(torch.nn.Module):
    """Final hidden states mean-pooled over the tokens, as `nectar embed --pooling mean`."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state.mean(1)


def export(model, path, vocab):
    ids = torch.randint(0, vocab, (2, 40))
    mask = torch.ones_like(ids)
    torch.onnx.export(Pooled(model), (ids, mask), path, input_names=["input_ids", "attention_mask"],
                      output_names=["pooled"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": {0: "b", 1: "l"}, "attention_mask": {0: "b", 1: "l"}})


def ort_times(sess, vocab, b, l, runs):
    g = np.random.default_rng(12345)
    feed = {"input_ids": g.integers(0, vocab, size=(b, l)).astype(np.int64),
            "attention_mask": np.ones((b, l), dtype=np.int64)}
    for _ in range(2):
        sess.run(None, feed)
    out, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        sess.run(None, feed)
        out.append((time.perf_counter() - t0) * 1e3 / b)
        cpu.append((time.process_time() - c0) * 1e3 / b)
    return out, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--nectar", default="build/nectar")
    ap.add_argument("--onnx", default="/tmp/nectar-modernbert.onnx")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = ModernBertModel.from_pretrained(a.dir, dtype=torch.float32, attn_implementation="eager").eval()
    vocab = model.config.vocab_size
    export(model, a.onnx, vocab)

    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(a.onnx, so, providers=["CPUExecutionProvider"])

    g = np.random.default_rng(7)
    ids = g.integers(0, vocab, size=(3, 64)).astype(np.int64)
    mask = np.ones_like(ids)
    with torch.inference_mode():
        ref = Pooled(model)(torch.tensor(ids), torch.tensor(mask)).numpy()
    got = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    print(f"onnxruntime {ort.__version__} vs pytorch {torch.__version__}: max |diff| of the pooled "
          f"vectors {np.abs(got - ref).max():.3g} (max |value| {np.abs(ref).max():.3g})")

    interleaved(a, f"onnxruntime {ort.__version__}", lambda b, l, runs: ort_times(sess, vocab, b, l, runs))

if __name__ == "__main__":
    main()
