#!/usr/bin/env python3
"""Writes the expected values for tests/bench/ (tests/fixtures/bench/):

  stats_cases.json   means, sample sds and percentiles from numpy (np.mean,
                     np.std(ddof=1), np.percentile with its default "linear"
                     method), and bootstrap intervals computed two ways:
                       * "lower"/"upper": the exact spec of src/bench/stats.h
                         (xoshiro256** seeded by splitmix64, indices
                         floor(((x >> 11) * 2^-53) * n), percentile bootstrap),
                         written again here in Python: C must match to ~1e-12;
                       * "scipy_lower"/"scipy_upper": scipy.stats.bootstrap
                         (method="percentile", each sample resampled on its
                         own), an independent implementation with its own
                         PRNG: C must agree within Monte-Carlo tolerance.
  hashes.json        SHA-256 (hashlib) of fixture files and of a fixture folder
                     by the folder rule of src/bench/sha256.h.
  param_counts.json  Qwen3 parameter counts reported by HF transformers for
                     real configs (model built on the meta device, nothing
                     downloaded): total and non-embedding.

Run: python3 tools/make_bench_fixtures.py
Needs numpy, scipy, torch, transformers (tools/requirements.txt).
"""
import json
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "bench")
M64 = (1 << 64) - 1


# --- the PRNG spec (same as src/gen/rng.c, used by src/bench/stats.c) -------------
def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Xoshiro256ss:
    def __init__(self, seed):
        st = seed & M64
        self.s = []
        for _ in range(4):
            st, v = splitmix64(st)
            self.s.append(v)

    def next(self):
        s = self.s
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def index(self, n):
        u = float(self.next() >> 11) * 2.0**-53
        i = int(u * float(n))
        return min(i, n - 1)


def group_ratio(num, den, idx):
    a = 0.0
    b = 0.0
    for i in idx:  # plain left-to-right sums, as in C
        a += num[i]
        b += den[i] if den is not None else 1.0
    return a / b


def spec_bootstrap(groups, stat, n_resamples, confidence, seed):
    rng = Xoshiro256ss(seed)
    est = stat([group_ratio(g["num"], g.get("den"), range(len(g["num"]))) for g in groups])
    reps = []
    for _ in range(n_resamples):
        r = []
        idx = None
        for g in groups:
            n = len(g["num"])
            if not g.get("paired"):  # a paired group reuses the previous draws
                idx = [rng.index(n) for _ in range(n)]
            r.append(group_ratio(g["num"], g.get("den"), idx))
        v = stat(r)
        if not np.isnan(v):
            reps.append(v)
    reps = np.array(reps)
    lo = float(np.percentile(reps, 100.0 * (1.0 - confidence) / 2.0))
    hi = float(np.percentile(reps, 100.0 * (1.0 + confidence) / 2.0))
    return est, lo, hi


def scipy_bootstrap(groups, stat, n_resamples, confidence):
    from scipy import stats as sst

    # resample indices of each group independently; the statistic then forms
    # each group's ratio of sums from the drawn observations
    def statistic(*idx_arrays):
        r = []
        for g, idx in zip(groups, idx_arrays):
            idx = np.asarray(idx, dtype=np.int64)
            num = np.asarray(g["num"])[idx].sum()
            den = np.asarray(g["den"])[idx].sum() if g.get("den") is not None else float(len(idx))
            r.append(num / den)
        return stat(r)

    # a paired group rides on the previous group's indices: scipy resamples
    # one index array per independent unit, and the statistic expands it
    units = [i for i, g in enumerate(groups) if not g.get("paired")]

    def expanded(*unit_idx):
        per_group = []
        k = -1
        for g in groups:
            if not g.get("paired"):
                k += 1
            per_group.append(unit_idx[k])
        return statistic(*per_group)

    data = tuple(np.arange(len(groups[i]["num"])) for i in units)
    res = sst.bootstrap(data, expanded, n_resamples=n_resamples, confidence_level=confidence,
                        method="percentile", vectorized=False, paired=False,
                        rng=np.random.default_rng(12345))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def ratio(r):
    return r[0] / r[1]


def ratio_product(r):
    return (r[0] / r[1]) * (r[2] / r[3])


def paired_product(r):  # (t_A / t_B) * (P_A / P_B) with groups tA, PA, tB, PB
    return (r[0] / r[2]) * (r[1] / r[3])


def make_stats():
    gen = np.random.default_rng(20261202)
    cases = []
    samples = {
        "lognormal_40": gen.lognormal(mean=np.log(0.020), sigma=0.25, size=40),
        "heavy_tail_25": np.concatenate([gen.normal(0.010, 0.0005, 23), [0.031, 0.045]]),
        "ties_7": np.array([3.0, 1.0, 2.0, 2.0, 5.0, 1.0, 4.0]),
        "single_1": np.array([0.125]),
        "two_2": np.array([1.0, 2.0]),
    }
    pcts = [0, 1, 5, 10, 25, 33.3, 50, 66.7, 75, 90, 95, 97.5, 99, 100]
    for name, x in samples.items():
        x = [float(v) for v in x]
        cases.append({
            "name": name,
            "x": x,
            "mean": float(np.mean(x)),
            "sd": float(np.std(x, ddof=1)) if len(x) > 1 else 0.0,
            "p50": float(np.percentile(x, 50)),
            "p95": float(np.percentile(x, 95)),
            "percentiles": [[p, float(np.percentile(x, p))] for p in pcts],
        })

    boots = []
    # S = t_A / t_B on latency samples (candidate B about 1.6x faster)
    lat_a = [float(v) for v in gen.lognormal(np.log(0.016), 0.2, 30)]
    lat_b = [float(v) for v in gen.lognormal(np.log(0.010), 0.3, 25)]
    # blocks: joules and seconds per block, R = P_A / P_B from ratio of sums
    dur_a = [float(v) for v in gen.uniform(0.9, 1.1, 6)]
    dur_b = [float(v) for v in gen.uniform(0.9, 1.1, 6)]
    e_a = [float(d * p) for d, p in zip(dur_a, gen.normal(12.0, 0.6, 6))]
    e_b = [float(d * p) for d, p in zip(dur_b, gen.normal(4.0, 0.4, 6))]
    same = [float(v) for v in gen.lognormal(np.log(0.02), 0.1, 20)]
    blk_n_a = [float(v) for v in gen.integers(8, 11, 6)]
    blk_n_b = [float(v) for v in gen.integers(8, 11, 6)]
    blk_lat_a = [float(n * v) for n, v in zip(blk_n_a, gen.lognormal(np.log(0.016), 0.1, 6))]
    blk_lat_b = [float(n * v) for n, v in zip(blk_n_b, gen.lognormal(np.log(0.010), 0.1, 6))]
    specs = [
        ("speed_ratio", [{"num": lat_a}, {"num": lat_b}], "ratio", 2000, 0.95, 7),
        ("speed_ratio_99", [{"num": lat_a}, {"num": lat_b}], "ratio", 4000, 0.99, 1234567),
        ("self_ratio", [{"num": same}, {"num": same}], "ratio", 2000, 0.95, 99),
        ("energy_gain", [{"num": lat_a}, {"num": lat_b}, {"num": e_a, "den": dur_a},
                         {"num": e_b, "den": dur_b}], "ratio_product", 3000, 0.95, 2026),
        # per block: (latency sum, completed) paired with (joules, seconds) of
        # the same blocks, as nectar bench --compare resamples them
        ("paired_blocks", [{"num": blk_lat_a, "den": blk_n_a}, {"num": e_a, "den": dur_a, "paired": True},
                           {"num": blk_lat_b, "den": blk_n_b}, {"num": e_b, "den": dur_b, "paired": True}],
         "paired_product", 3000, 0.95, 77),
    ]
    fns = {"ratio": ratio, "ratio_product": ratio_product, "paired_product": paired_product}
    for name, groups, stat, nres, conf, seed in specs:
        est, lo, hi = spec_bootstrap(groups, fns[stat], nres, conf, seed)
        slo, shi = scipy_bootstrap(groups, fns[stat], 20000, conf)
        boots.append({"name": name, "groups": groups, "stat": stat, "n_resamples": nres,
                      "confidence": conf, "seed": seed, "estimate": est, "lower": lo,
                      "upper": hi, "scipy_lower": slo, "scipy_upper": shi})
        print(f"{name}: est {est:.6g} spec [{lo:.6g}, {hi:.6g}] scipy [{slo:.6g}, {shi:.6g}]")

    rng = Xoshiro256ss(0)
    first = [rng.next() for _ in range(4)]
    st, sm0 = splitmix64(0)
    doc = {
        "generator": "tools/make_bench_fixtures.py",
        "cases": cases,
        "bootstrap": boots,
        "rng": {"seed": 0, "splitmix64_first": str(sm0), "xoshiro_first": [str(v) for v in first]},
    }
    with open(os.path.join(OUT, "stats_cases.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def make_param_counts():
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    configs = {
        "qwen3-0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                           num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                           vocab_size=151936, tie_word_embeddings=True),
        "qwen3-4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                         vocab_size=151936, tie_word_embeddings=True),
        "qwen3-8b": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                         vocab_size=151936, tie_word_embeddings=False),
        "tiny-gqa-untied": dict(hidden_size=96, intermediate_size=200, num_hidden_layers=3,
                                num_attention_heads=6, num_key_value_heads=2, head_dim=40,
                                vocab_size=1000, tie_word_embeddings=False),
    }
    out = {}
    for name, kw in configs.items():
        cfg = Qwen3Config(**kw)
        with torch.device("meta"):
            model = Qwen3ForCausalLM(cfg)
        total = sum(p.numel() for p in model.parameters())  # tied weights counted once
        emb = model.model.embed_tokens.weight.numel()
        head = 0 if kw["tie_word_embeddings"] else model.lm_head.weight.numel()
        cfg_json = dict(kw, model_type="qwen3")
        out[name] = {"config": cfg_json, "total": total, "non_embedding": total - emb - head}
        print(f"{name}: total {total} non-embedding {total - emb - head}")
    with open(os.path.join(OUT, "param_counts.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def folder_sha256(root):
    import hashlib

    lines = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            with open(full, "rb") as f:
                lines.append((rel, hashlib.sha256(f.read()).hexdigest()))
    lines.sort(key=lambda x: x[0].encode())
    h = hashlib.sha256()
    for rel, hx in lines:
        h.update(f"{rel}\t{hx}\n".encode())
    return h.hexdigest()


def make_hashes():
    import hashlib

    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    out = {}
    for rel in ["tests/fixtures/bench/prompts.txt", "tests/fixtures/bench/qwen3-0.6b-config.json",
                "tests/fixtures/bench/powermetrics_m3max.plist"]:
        with open(os.path.join(repo, rel), "rb") as f:
            out[rel] = hashlib.sha256(f.read()).hexdigest()
    out["tests/fixtures/bench/powercap"] = folder_sha256(os.path.join(repo, "tests/fixtures/bench/powercap"))
    with open(os.path.join(OUT, "hashes.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    make_hashes()
    make_stats()
    make_param_counts()
