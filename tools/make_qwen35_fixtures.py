#!/usr/bin/env python3
"""Write tests/fixtures/qwen35/: tiny random Qwen3.5 checkpoints (hybrid Gated
DeltaNet + gated attention) in both Hugging Face layouts, with transformers'
reference logits and greedy continuations, for nectar's CPU parity tests.

- tiny_text_untied: Qwen3_5ForCausalLM (model_type qwen3_5_text, weights under
  model.*), untied LM head, layer pattern given by `full_attention_interval`
  (layer_types removed from config.json), conv kernel 4.
- tiny_vl_tied: Qwen3_5ForConditionalGeneration (model_type qwen3_5, nested
  text_config, weights under model.language_model.*, a tiny vision tower under
  model.visual.* that nectar must skip), tied head, explicit layer_types,
  mRoPE sections in rope_parameters, conv kernel 3.

Both have head_dim != hidden / heads, partial rotary and different head counts
for the linear-attention and full-attention layers. The tokenizer is a small
byte-level BPE trained here on a few sentences and saved through transformers'
own Qwen3_5Tokenizer class (Qwen3.5's split regex, NFC); the model vocabulary
is padded past it as the real checkpoints are.

Prompts: a short one, a chat-formatted one and one of more than three
64-token chunks, so the chunked delta rule runs over several chunks.
Logits are stored for every position of the short prompts and every 4th
position (and the last) of the long one to keep each folder small.

The chat template is Qwen3.5's (tests/fixtures/qwen35/chat_template.jinja,
copied into each folder as the hub's folders have it); the chat fixture
tests/fixtures/chat/qwen35_cases.jsonl is transformers' apply_chat_template
with it over the Qwen3 cases of make_tokenizer_fixtures.py plus Qwen3.5's own
rules (trimmed contents, errors), always with an explicit enable_thinking
(the small and large Qwen3.5 templates differ only in its default).

Run: python3 tools/make_qwen35_fixtures.py [--out tests/fixtures/qwen35]
     python3 tools/make_qwen35_fixtures.py --verify   (re-check only)
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TEMPLATE = os.path.join(ROOT, "tests", "fixtures", "qwen35", "chat_template.jinja")
CHAT_OUT = os.path.join(ROOT, "tests", "fixtures", "chat", "qwen35_cases.jsonl")
N_GREEDY = 32
MIN_MARGIN = 2e-3
MODEL_VOCAB = 400
TOKENIZER_VOCAB = 360
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]

CORPUS = [
    "In the beginning God created the heaven and the earth.",
    "And the earth was without form, and void; and darkness was upon the face of the deep.",
    "The quick brown fox jumps over the lazy dog while the cat sleeps in the sun.",
    "Linear attention keeps a fixed-size state; full attention keeps every key and value.",
    "Numbers like 12, 345 and 6789 are split digit by digit. Café, naïve, résumé!",
    "def forward(x):\n    return x * 2 + 1\n",
]
LONG_TEXT = " ".join(CORPUS)
PROMPTS = [
    "Hello",
    "<|im_start|>user\nWho made the heaven and the earth?<|im_end|>\n<|im_start|>assistant\n",
    LONG_TEXT,
]
LONG_STRIDE = 4  # logits of every 4th position (and the last) of prompts over 64 tokens

FIXTURES = [
    # name, layout, seed, text config fields, layer pattern
    ("tiny_text_untied", "causal", 1, dict(
        hidden_size=48, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        head_dim=24, intermediate_size=64, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=16, linear_value_head_dim=12, linear_conv_kernel_dim=4,
        tie_word_embeddings=False, rms_norm_eps=1e-6, max_position_embeddings=512,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "partial_rotary_factor": 0.5}),
     {"full_attention_interval": 2}),
    ("tiny_vl_tied", "vl", 2, dict(
        hidden_size=40, num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1,
        head_dim=32, intermediate_size=56, linear_num_key_heads=3, linear_num_value_heads=6,
        linear_key_head_dim=8, linear_value_head_dim=16, linear_conv_kernel_dim=3,
        tie_word_embeddings=True, rms_norm_eps=1e-5, max_position_embeddings=512,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                         "partial_rotary_factor": 0.25, "mrope_section": [2, 1, 1],
                         "mrope_interleaved": True}),
     {"layer_types": ["linear_attention", "full_attention", "linear_attention"]}),
    # eos is <|im_end|> only (as in every fixture), and this seed's greedy
    # continuation of the chat prompt emits <|endoftext|> (the bos) mid-way:
    # generate() runs on through it, so nectar run must too
    ("tiny_eos_mid", "causal", 101, dict(
        hidden_size=64, num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=2,
        head_dim=32, intermediate_size=96, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=8, linear_value_head_dim=12, linear_conv_kernel_dim=2,
        tie_word_embeddings=True, rms_norm_eps=1e-6, max_position_embeddings=512,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                         "partial_rotary_factor": 0.25}),
     {"layer_types": ["full_attention", "linear_attention", "full_attention"]}),
]


def log(msg):
    print(msg, flush=True)


def make_tokenizer(d):
    """A byte-level BPE trained on CORPUS with Qwen3.5's pre-tokenizer, saved
    through Qwen3_5Tokenizer so the folder has what the hub's tokenizer has."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import Qwen3_5Tokenizer
    from transformers.models.qwen3_5.tokenization_qwen3_5 import PRETOKENIZE_REGEX
    from tokenizers import Regex

    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=TOKENIZER_VOCAB - len(SPECIALS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t.train_from_iterator(CORPUS * 4, trainer)
    spec = json.loads(t.to_str())
    vocab = spec["model"]["vocab"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in spec["model"]["merges"]]
    tk = Qwen3_5Tokenizer(vocab=vocab, merges=merges)
    tk.add_special_tokens({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                           "additional_special_tokens": SPECIALS})
    tk.save_pretrained(d)
    shutil.copyfile(TEMPLATE, os.path.join(d, "chat_template.jinja"))
    return tk


def make_text_config(fields, pattern, vocab, eos, bos):
    from transformers import Qwen3_5TextConfig

    f = dict(fields)
    f.update(pattern)
    return Qwen3_5TextConfig(vocab_size=vocab, hidden_act="silu", attention_bias=False,
                             initializer_range=0.15, bos_token_id=bos, eos_token_id=eos,
                             pad_token_id=bos, **f)


def make_model(layout, text_cfg):
    from transformers import Qwen3_5Config, Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration

    if layout == "causal":
        return Qwen3_5ForCausalLM(text_cfg)
    vision = dict(depth=1, hidden_size=16, num_heads=2, intermediate_size=24, patch_size=2,
                  temporal_patch_size=1, spatial_merge_size=1, out_hidden_size=text_cfg.hidden_size,
                  num_position_embeddings=16)
    cfg = Qwen3_5Config(text_config=text_cfg.to_dict(), vision_config=vision,
                        tie_word_embeddings=text_cfg.tie_word_embeddings)
    return Qwen3_5ForConditionalGeneration(cfg)


def randomize(model, seed, std):
    """Normal(0, std) matrices; the (1 + w) RMSNorms get w in [-0.5, 0.5), the
    gated RMSNorm (plain w) [0.5, 1.5), so a norm read with the wrong
    convention shows; A_log and dt_bias give decays between about 0.5 and 1
    per token so the state carries across chunks."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("linear_attn.norm.weight"):
                p.uniform_(0.5, 1.5)
            elif name.endswith("norm.weight") and ".visual." not in name:
                p.uniform_(-0.5, 0.5)
            elif name.endswith("A_log"):
                p.copy_(torch.empty_like(p).uniform_(0.05, 1.0).log())
            elif name.endswith("dt_bias"):
                p.normal_(-1.0, 0.5)
            elif name.endswith("conv1d.weight"):
                p.normal_(0.0, 0.4)
            else:
                p.normal_(0.0, std)
        if model.config.tie_word_embeddings:
            model.tie_weights()


def rewrite_config(path, pattern):
    """full_attention_interval instead of layer_types where the fixture says so
    (what older configs hold); HF derives the same layer list from either."""
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    tc = cfg.get("text_config", cfg)
    if "full_attention_interval" in pattern:
        tc.pop("layer_types")
        tc["full_attention_interval"] = pattern["full_attention_interval"]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def load_reference_model(d, layout):
    from transformers import Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration

    cls = Qwen3_5ForCausalLM if layout == "causal" else Qwen3_5ForConditionalGeneration
    return cls.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()


def hf_greedy(model, ids):
    """N_GREEDY argmax steps through HF's cache (chunked prefill, recurrent
    decode), never stopped by eos. Returns (ids, smallest top-1/top-2 gap)."""
    with torch.no_grad():
        r = model.generate(input_ids=torch.tensor([ids]), max_new_tokens=N_GREEDY, do_sample=False,
                           eos_token_id=None, output_scores=True, return_dict_in_generate=True)
    out = r.sequences[0, len(ids):].tolist()
    margin = min(float(torch.topk(s[0].float(), 2).values.diff().abs()) for s in r.scores)
    return out, margin


def stored_positions(n):
    if n <= 64:
        return list(range(n))
    return sorted(set(range(LONG_STRIDE - 1, n, LONG_STRIDE)) | {n - 1})


def make_fixture(out_root, name, layout, seed, fields, pattern):
    d = os.path.join(out_root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    tk = make_tokenizer(d)
    eos, bos = tk.convert_tokens_to_ids("<|im_end|>"), tk.convert_tokens_to_ids("<|endoftext|>")
    assert len(tk) <= MODEL_VOCAB, len(tk)
    prompt_ids = [tk.encode(p, add_special_tokens=False) for p in PROMPTS]
    assert len(prompt_ids[2]) > 3 * 64, len(prompt_ids[2])
    for attempt in range(20):
        s = seed * 1000 + attempt
        model = make_model(layout, make_text_config(fields, pattern, MODEL_VOCAB, eos, bos))
        randomize(model, s, 0.15)
        for f in os.listdir(d):
            if f.endswith(".safetensors") or f in ("config.json", "generation_config.json"):
                os.remove(os.path.join(d, f))
        model.save_pretrained(d, safe_serialization=True)
        rewrite_config(os.path.join(d, "config.json"), pattern)
        ref = load_reference_model(d, layout)
        prompts, margin = [], float("inf")
        for i, ids in enumerate(prompt_ids):
            with torch.no_grad():
                logits = ref(input_ids=torch.tensor([ids])).logits[0].float().numpy()
            pos = stored_positions(len(ids))
            greedy, m = hf_greedy(ref, ids)
            margin = min(margin, m)
            np.save(os.path.join(d, "logits_%d.npy" % i),
                    np.ascontiguousarray(logits[pos], dtype="<f4"))
            prompts.append({"text": PROMPTS[i], "ids": ids, "logits_file": "logits_%d.npy" % i,
                            "logit_positions": pos, "greedy_ids": greedy,
                            "greedy_text": tk.decode(greedy), "min_greedy_margin": round(m, 6)})
        if margin >= MIN_MARGIN:
            break
        log("%s: seed %d has a greedy step with top-2 gap %.2g; next seed" % (name, s, margin))
    else:
        raise SystemExit("%s: no seed gave greedy margins >= %g" % (name, MIN_MARGIN))
    reference = {
        "layout": layout,
        "comment": "HF transformers %s, %s (eager attention, torch delta-rule fallbacks) in "
                   "float32; logits_<i>.npy is float32 [len(logit_positions), vocab]; greedy_ids "
                   "are %d argmax steps of generate(), not stopped by eos." % (
                       __import__("transformers").__version__, type(ref).__name__, N_GREEDY),
        "seed": s,
        "prompts": prompts,
    }
    with open(os.path.join(d, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, indent=1, ensure_ascii=False)
        f.write("\n")
    write_run_files(d, tk, eos, prompts)
    size = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))
    log("%s: seed %d, min greedy margin %.4f, prompt lengths %s, %d bytes" % (
        name, s, margin, [len(p) for p in prompt_ids], size))


def write_run_files(d, tk, eos, prompts):
    """run_<i>.prompt / run_<i>.expected for tests/cli/test_qwen35_run.sh:
    the prompt's bytes and what `nectar run --temp 0 -n 32` must print, HF's
    greedy text up to the first eos (where run stops)."""
    for i, p in enumerate(prompts):
        ids = p["greedy_ids"]
        if eos in ids:
            ids = ids[:ids.index(eos)]
        with open(os.path.join(d, "run_%d.prompt" % i), "w", encoding="utf-8") as f:
            f.write(p["text"])
        with open(os.path.join(d, "run_%d.expected" % i), "wb") as f:
            f.write(tk.decode(ids).encode("utf-8"))


def verify_fixture(out_root, name):
    d = os.path.join(out_root, name)
    with open(os.path.join(d, "reference.json"), encoding="utf-8") as f:
        ref = json.load(f)
    model = load_reference_model(d, ref["layout"])
    worst = 0.0
    for p in ref["prompts"]:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([p["ids"]])).logits[0].float().numpy()
        want = np.load(os.path.join(d, p["logits_file"]))
        worst = max(worst, float(np.abs(want - logits[p["logit_positions"]]).max()))
        if hf_greedy(model, p["ids"])[0] != p["greedy_ids"]:
            raise SystemExit("%s: greedy continuation differs on reload" % name)
    if worst > 1e-5:
        raise SystemExit("%s: reloaded logits differ from the saved ones by %g" % (name, worst))
    log("%s: reload reproduces logits (max abs diff %.3g) and greedy ids" % (name, worst))


# Beyond the Qwen3 cases: what Qwen3.5's template does differently.
QWEN35_CASES = [
    ("trimmed_contents", [{"role": "system", "content": "  sys \n"},
                          {"role": "user", "content": "\n hello \t"},
                          {"role": "assistant", "content": " <think> r </think>\n\n answer \n"},
                          {"role": "user", "content": "again "}], {"add_generation_prompt": True}),
    ("no_user_query", [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}],
     {}),
    ("tool_first", [{"role": "tool", "content": "r"}, {"role": "user", "content": "u"}],
     {"add_generation_prompt": True}),
    ("unknown_role", [{"role": "user", "content": "u"}, {"role": "narrator", "content": "n"}], {}),
    ("assistant_after_query_empty_reasoning", [{"role": "user", "content": "u"},
                                               {"role": "assistant", "content": "a1"},
                                               {"role": "assistant", "content": "a2"}], {}),
]


CHAT_CLI_MESSAGE = "Who made the heaven?"


def write_chat_cases(tok_dir):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_tokenizer_fixtures import CHAT_CASES
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tok_dir)
    with open(TEMPLATE, encoding="utf-8") as f:
        assert tok.chat_template == f.read(), "the folder's template is not chat_template.jinja"
    rows = []
    for name, msgs, opts in list(CHAT_CASES) + QWEN35_CASES:
        o = {"add_generation_prompt": bool(opts.get("add_generation_prompt", False)),
             "enable_thinking": bool(opts.get("enable_thinking", True))}
        row = {"name": name, "messages": msgs, **o}
        try:
            row["expected"] = tok.apply_chat_template(msgs, tokenize=False, **o)
        except Exception as e:  # the template's raise_exception
            row["error"] = str(e)
        rows.append(row)
    with open(CHAT_OUT, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    log("%s: %d cases (%d errors)" % (CHAT_OUT, len(rows), sum("error" in r for r in rows)))
    # for tests/cli/test_qwen35_run.sh: the token count of `nectar chat`'s
    # first prompt, thinking on and off
    m = [{"role": "user", "content": CHAT_CLI_MESSAGE}]
    counts = [len(tok.encode(tok.apply_chat_template(m, tokenize=False, add_generation_prompt=True,
                                                     enable_thinking=e), add_special_tokens=False))
              for e in (True, False)]
    with open(os.path.join(tok_dir, "chat_prompt_tokens.txt"), "w", encoding="utf-8") as f:
        f.write("%d %d\n" % tuple(counts))


def write_readme(out_root):
    lines = [
        "# Tiny random Qwen3.5 checkpoints with Hugging Face references",
        "",
        "Made by `tools/make_qwen35_fixtures.py` (fixed seeds; `--verify` re-checks).",
        "Each folder is a Hugging Face model folder plus reference.json: prompt ids,",
        "`logits_<i>.npy` (float32, HF logits at `logit_positions`) and `greedy_ids`",
        "(32 argmax steps of HF generate(), not stopped by eos), all computed in float32.",
        "",
        "| folder | layout | hidden | layers | attn heads / kv / head_dim | linear k / v heads, dk / dv | conv | head |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, layout, _, f, pattern in FIXTURES:
        lines.append("| %s | %s | %d | %d (%s) | %d / %d / %d | %d / %d, %d / %d | %d | %s |" % (
            name, "Qwen3_5ForCausalLM" if layout == "causal" else "Qwen3_5ForConditionalGeneration",
            f["hidden_size"], f["num_hidden_layers"], ", ".join("%s=%s" % kv for kv in pattern.items()),
            f["num_attention_heads"], f["num_key_value_heads"], f["head_dim"],
            f["linear_num_key_heads"], f["linear_num_value_heads"], f["linear_key_head_dim"],
            f["linear_value_head_dim"], f["linear_conv_kernel_dim"],
            "tied" if f["tie_word_embeddings"] else "untied"))
    lines += ["", "Prompt lengths: a few tokens, a chat-formatted prompt, and over 3 chunks of 64.", ""]
    with open(os.path.join(out_root, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "qwen35"))
    ap.add_argument("--verify", action="store_true", help="only re-check the existing fixtures")
    ap.add_argument("--only", help="make (or verify) only this fixture")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if not args.verify:
        os.makedirs(args.out, exist_ok=True)
        for name, layout, seed, fields, pattern in FIXTURES:
            if args.only in (None, name):
                make_fixture(args.out, name, layout, seed, fields, pattern)
        write_readme(args.out)
        if args.only is None:
            write_chat_cases(os.path.join(args.out, FIXTURES[1][0]))
    for name, *_ in FIXTURES:
        if args.only in (None, name):
            verify_fixture(args.out, name)


if __name__ == "__main__":
    sys.exit(main())
