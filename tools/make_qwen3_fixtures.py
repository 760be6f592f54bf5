#!/usr/bin/env python3
"""Write tests/fixtures/qwen3/: tiny random Qwen3 checkpoints in HF layout and
Hugging Face reference outputs (per-position logits and greedy continuations)
for nectar's CPU parity tests. Random init with a fixed seed; norm weights are
randomised too so the RMSNorm scaling is exercised. The vocabulary is the demo
tokenizer's (models/demo/), copied into each folder.

Run: python3 tools/make_qwen3_fixtures.py [--out tests/fixtures/qwen3]
     python3 tools/make_qwen3_fixtures.py --verify   (re-check only)
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TOKENIZER_DIR = os.path.join(ROOT, "models", "demo")

# Lengths 1, 7 and 19 tokens with the demo tokenizer; the last holds special
# tokens (ids near the end of the vocabulary).
PROMPTS = [
    "In",
    "And God said, Let there be",
    "<|im_start|>user\nWho made the heaven and the earth?<|im_end|>\n<|im_start|>assistant\n",
]
PROMPT_LENGTHS = [1, 7, 19]
N_GREEDY = 32
# Below this top-1/top-2 logit gap a greedy step could flip on rounding alone;
# a seed whose continuations come that close is skipped.
MIN_MARGIN = 2e-3

FIXTURES = [
    # name, storage dtype, rope style in config.json, seed, config fields
    ("tiny_gqa2", "float32", "rope_theta", 1, dict(
        hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        head_dim=24, intermediate_size=96, tie_word_embeddings=False, rope_theta=10000.0,
        rms_norm_eps=1e-6, max_position_embeddings=256)),
    ("tiny_gqa4_tied", "float32", "rope_parameters", 2, dict(
        hidden_size=48, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
        head_dim=16, intermediate_size=80, tie_word_embeddings=True, rope_theta=1000000.0,
        rms_norm_eps=1e-5, max_position_embeddings=128)),
    ("tiny_bf16", "bfloat16", "rope_parameters", 3, dict(
        hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        head_dim=24, intermediate_size=96, tie_word_embeddings=True, rope_theta=10000.0,
        rms_norm_eps=1e-6, max_position_embeddings=256)),
]


def log(msg):
    print(msg, flush=True)


def hf_greedy(model, ids, n):
    """Greedy decoding through HF's KV cache, as generate(do_sample=False) does,
    but never stopping at an end-of-sequence token: the C tests compare a fixed
    number of tokens. Returns (generated ids, smallest top-1/top-2 logit gap)."""
    x = torch.tensor([ids])
    out, margin, past = [], float("inf"), None
    with torch.no_grad():
        for _ in range(n):
            r = model(input_ids=x, past_key_values=past, use_cache=True)
            past = r.past_key_values
            logits = r.logits[0, -1].float()
            top2 = torch.topk(logits, 2).values
            margin = min(margin, float(top2[0] - top2[1]))
            nxt = int(torch.argmax(logits))
            out.append(nxt)
            x = torch.tensor([[nxt]])
    return out, margin


def make_config(vocab, eot, im_end, fields):
    from transformers import Qwen3Config

    f = dict(fields)
    theta = f.pop("rope_theta")
    return Qwen3Config(vocab_size=vocab, hidden_act="silu", attention_bias=False,
                       attention_dropout=0.0, initializer_range=0.15, use_cache=True,
                       rope_parameters={"rope_type": "default", "rope_theta": theta},
                       bos_token_id=eot, eos_token_id=im_end, pad_token_id=eot, **f)


def randomize(model, seed):
    """Qwen3's own init (normal, std initializer_range) for matrices, then
    norm weights drawn from [0.5, 1.5) so a missing or misplaced norm shows."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5)
            else:
                p.normal_(0.0, model.config.initializer_range)
        if model.config.tie_word_embeddings:
            model.tie_weights()


def set_rope_style(path, style):
    """Rewrite config.json so the theta sits where `style` says: transformers 5
    writes rope_parameters; older checkpoints have a top-level rope_theta."""
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    theta = cfg.get("rope_parameters", {}).get("rope_theta", cfg.get("rope_theta"))
    if style == "rope_theta":
        cfg.pop("rope_parameters", None)
        cfg["rope_theta"] = theta
        cfg["rope_scaling"] = None
    else:
        cfg.pop("rope_theta", None)
        cfg.pop("rope_scaling", None)
        cfg["rope_parameters"] = {"rope_theta": theta, "rope_type": "default"}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    return theta


def load_reference_model(d, dtype):
    """The model as the reference computes it: saved weights, upcast to fp32."""
    from transformers import Qwen3ForCausalLM

    m = Qwen3ForCausalLM.from_pretrained(d, dtype=getattr(torch, dtype), attn_implementation="eager")
    return m.float().eval()


def copy_tokenizer(d):
    # Written compact (same content as models/demo/tokenizer.json) to keep the
    # three copies small.
    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))
    shutil.copyfile(os.path.join(TOKENIZER_DIR, "tokenizer_config.json"),
                    os.path.join(d, "tokenizer_config.json"))


def make_fixture(out_root, name, dtype, rope_style, seed, fields, tk):
    from transformers import GenerationConfig, Qwen3ForCausalLM

    eot = tk.convert_tokens_to_ids("<|endoftext|>")
    im_end = tk.convert_tokens_to_ids("<|im_end|>")
    prompt_ids = [tk.encode(p, add_special_tokens=False) for p in PROMPTS]
    assert [len(p) for p in prompt_ids] == PROMPT_LENGTHS, [len(p) for p in prompt_ids]
    d = os.path.join(out_root, name)
    for attempt in range(20):
        s = seed * 1000 + attempt
        cfg = make_config(len(tk), eot, im_end, fields)
        model = Qwen3ForCausalLM(cfg)
        randomize(model, s)
        model = model.to(getattr(torch, dtype))
        model.generation_config = GenerationConfig(bos_token_id=eot, eos_token_id=[im_end, eot],
                                                   pad_token_id=eot, do_sample=False)
        shutil.rmtree(d, ignore_errors=True)
        model.save_pretrained(d, safe_serialization=True)
        theta = set_rope_style(os.path.join(d, "config.json"), rope_style)
        assert theta == fields["rope_theta"], (theta, fields["rope_theta"])
        copy_tokenizer(d)

        ref = load_reference_model(d, dtype)
        got_theta = ref.config.rope_parameters["rope_theta"]
        assert got_theta == fields["rope_theta"], "HF read rope theta %r from %s" % (got_theta, d)
        prompts, margin = [], float("inf")
        for i, ids in enumerate(prompt_ids):
            with torch.no_grad():
                logits = ref(input_ids=torch.tensor([ids])).logits[0].float().numpy()
            greedy, m = hf_greedy(ref, ids, N_GREEDY)
            margin = min(margin, m)
            np.save(os.path.join(d, "logits_%d.npy" % i), np.ascontiguousarray(logits, dtype="<f4"))
            prompts.append({"text": PROMPTS[i], "ids": ids, "logits_file": "logits_%d.npy" % i,
                            "greedy_ids": greedy, "min_greedy_margin": round(m, 6)})
        if margin >= MIN_MARGIN:
            break
        log("%s: seed %d has a greedy step with top-2 gap %.2g; next seed" % (name, s, margin))
    else:
        raise SystemExit("%s: no seed gave greedy margins >= %g" % (name, MIN_MARGIN))

    reference = {
        "dtype": dtype,
        "reference_compute": "float32",
        "comment": "HF transformers %s, Qwen3ForCausalLM (eager attention) from the saved weights "
                   "loaded then .float(); logits_<i>.npy is float32 [T, vocab] for every prompt "
                   "position; greedy_ids are %d argmax steps through HF's KV cache, not stopped by "
                   "eos." % (__import__("transformers").__version__, N_GREEDY),
        "seed": s,
        "rope_config_style": rope_style,
        "prompts": prompts,
    }
    with open(os.path.join(d, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, indent=1, ensure_ascii=False)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))
    log("%s: seed %d, min greedy margin %.4f, %d bytes" % (name, s, margin, size))


def verify_fixture(out_root, name):
    """Reload the folder with HF and check it reproduces the stored references."""
    d = os.path.join(out_root, name)
    with open(os.path.join(d, "reference.json"), encoding="utf-8") as f:
        ref = json.load(f)
    model = load_reference_model(d, ref["dtype"])
    worst = 0.0
    for p in ref["prompts"]:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([p["ids"]])).logits[0].float().numpy()
        want = np.load(os.path.join(d, p["logits_file"]))
        if want.shape != logits.shape or want.dtype != np.float32:
            raise SystemExit("%s/%s: shape %s dtype %s, expected %s float32" % (
                name, p["logits_file"], want.shape, want.dtype, logits.shape))
        worst = max(worst, float(np.abs(want - logits).max()))
        greedy, _ = hf_greedy(model, p["ids"], len(p["greedy_ids"]))
        if greedy != p["greedy_ids"]:
            raise SystemExit("%s: greedy continuation differs on reload" % name)
        with torch.no_grad():
            gen = model.generate(input_ids=torch.tensor([p["ids"]]), max_new_tokens=N_GREEDY,
                                 do_sample=False, eos_token_id=None)[0, len(p["ids"]):].tolist()
        if gen != greedy[:len(gen)]:
            raise SystemExit("%s: generate() disagrees with the greedy loop" % name)
    if worst > 1e-5:
        raise SystemExit("%s: reloaded logits differ from the saved ones by %g" % (name, worst))
    log("%s: reload reproduces logits (max abs diff %.3g) and greedy ids" % (name, worst))


def write_readme(out_root):
    lines = [
        "# Tiny random Qwen3 checkpoints with Hugging Face references",
        "",
        "Made by `tools/make_qwen3_fixtures.py` (fixed seeds; regenerate with",
        "`python3 tools/make_qwen3_fixtures.py`, re-check with `--verify`).",
        "Each folder is a Hugging Face model folder (config.json, generation_config.json,",
        "model.safetensors, tokenizer.json and tokenizer_config.json copied from the demo",
        "tokenizer in models/demo/) plus reference.json: the prompt ids, `logits_<i>.npy`",
        "(float32 [T, vocab], HF logits at every prompt position) and `greedy_ids` (32 HF",
        "argmax steps, not stopped by eos). References are computed in float32 by",
        "transformers' Qwen3ForCausalLM (eager attention) from the saved weights; for the",
        "bf16 fixture the bf16 weights are loaded and then upcast (`.float()`).",
        "Weights are random (normal, std 0.15); norm weights uniform in [0.5, 1.5).",
        "A seed is kept only if every greedy step's top-1/top-2 logit gap is >= %g." % MIN_MARGIN,
        "",
        "| folder | weights | hidden | layers | heads / kv heads | head_dim | inter | lm_head | rope in config.json |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, dtype, rope_style, _, f in FIXTURES:
        lines.append("| %s | %s | %d | %d | %d / %d | %d | %d | %s | `%s` (theta %g), eps %g |" % (
            name, dtype, f["hidden_size"], f["num_hidden_layers"], f["num_attention_heads"],
            f["num_key_value_heads"], f["head_dim"], f["intermediate_size"],
            "tied" if f["tie_word_embeddings"] else "untied", rope_style, f["rope_theta"],
            f["rms_norm_eps"]))
    lines += ["", "Prompts (demo tokenizer): lengths %s tokens; the last holds `<|im_start|>`/"
              "`<|im_end|>`." % ", ".join(str(n) for n in PROMPT_LENGTHS), "",
              "Size: about 6 MB in all. The 4096-entry vocabulary dominates: fp32 embedding",
              "(and untied LM head) matrices of 1 MB each and 27 logit rows of 16 KB per",
              "fixture; the tokenizer copies are written compact (same content).", ""]
    with open(os.path.join(out_root, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "qwen3"))
    ap.add_argument("--verify", action="store_true", help="only re-check the existing fixtures")
    ap.add_argument("--only", help="make just this fixture")
    args = ap.parse_args()
    torch.set_num_threads(1)
    from transformers import AutoTokenizer

    names = [f[0] for f in FIXTURES if not args.only or f[0] == args.only]
    if not args.verify:
        tk = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
        os.makedirs(args.out, exist_ok=True)
        for name, dtype, rope_style, seed, fields in FIXTURES:
            if name in names:
                make_fixture(args.out, name, dtype, rope_style, seed, fields, tk)
        write_readme(args.out)
    for name in names:
        verify_fixture(args.out, name)


if __name__ == "__main__":
    sys.exit(main())
