#!/usr/bin/env python3
"""Train nectar's bundled demo model (models/demo/): a byte-level BPE tokenizer
built like Qwen3's and a small Qwen3ForCausalLM, both trained on the King James
Bible (public domain, Debian package bible-kjv). The result is a real Qwen3
checkpoint in HF layout, small enough to commit, for demos and parity tests.

Stages (default: all, in order):
  tokenizer  train the BPE tokenizer, write tokenizer.json + tokenizer_config.json
  train      train the model, saving a usable checkpoint every --save-every steps
  reference  load the saved weights back in float32 and record HF greedy output
Run: python3 tools/train_demo.py [--stage all] [--out models/demo]
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

QWEN3_TOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                             "qwen3-tokenizer")

# Added tokens in Qwen3's order; flags as in Qwen3's tokenizer.json (<think> and
# </think> are not "special" there, so skip_special_tokens keeps them).
ADDED_TOKENS = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<think>", False),
    ("</think>", False),
]

REFERENCE_PROMPTS = ["In the beginning", "And the LORD said unto Moses,", "Blessed are the"]
VERSE_RE = re.compile(r"^([1-3]?[A-Za-z]+)(\d+):(\d+) (.*)$")


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def kjv_verses():
    """All 31,102 verses of the KJV, text only (the 'Ge1:1 ' references are cut)."""
    raw = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    verses = []
    for line in raw.splitlines():
        m = VERSE_RE.match(line)
        if not m:
            raise SystemExit("unexpected line from `bible`: %r" % line[:80])
        verses.append(m.group(4).strip())
    if len(verses) != 31102:
        raise SystemExit("expected 31102 verses from `bible`, got %d" % len(verses))
    return verses


def corpus_text(verses):
    # One verse per line: the model learns to end a verse with a newline, which
    # keeps greedy continuations readable.
    return "\n".join(verses) + "\n"


# ---------------------------------------------------------------- tokenizer


def qwen3_split_regex():
    path = os.path.join(QWEN3_TOK_DIR, "tokenizer.json")
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    for pt in tj["pre_tokenizer"]["pretokenizers"]:
        if pt["type"] == "Split":
            return pt["pattern"]["Regex"]
    raise SystemExit("%s: no Split pre-tokenizer" % path)


def build_tokenizer(text, vocab_size):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(qwen3_split_regex()), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    # The BPE vocabulary gets every byte (initial alphabet) plus merges; the
    # added tokens come after it, as in Qwen3 (ids vocab..vocab+4).
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - len(ADDED_TOKENS), min_frequency=2,
                                  show_progress=False, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
    for content, special in ADDED_TOKENS:
        t = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False,
                       special=special)
        if special:
            tok.add_special_tokens([t])
        else:
            tok.add_tokens([t])
    return tok


def write_tokenizer_config(out_dir, tok):
    """tokenizer_config.json: Qwen3's, with the added-token ids of our vocabulary."""
    with open(os.path.join(QWEN3_TOK_DIR, "tokenizer_config.json"), encoding="utf-8") as f:
        qcfg = json.load(f)
    decoder = {}
    for content, special in ADDED_TOKENS:
        decoder[str(tok.token_to_id(content))] = {
            "content": content, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": special}
    cfg = {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": decoder,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "chat_template": qcfg["chat_template"],
        "clean_up_tokenization_spaces": False,
        "eos_token": qcfg["eos_token"],
        "errors": "replace",
        "model_max_length": 512,
        "pad_token": qcfg["pad_token"],
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")


def stage_tokenizer(args, text):
    os.makedirs(args.out, exist_ok=True)
    tok = build_tokenizer(text, args.vocab)
    path = os.path.join(args.out, "tokenizer.json")
    tj = json.loads(tok.to_str())
    # The Python bindings ignore the ByteLevel decoder's options and write None
    # for the BPE affixes; set them to what Qwen3's tokenizer.json holds so the
    # two files differ only in vocabulary, merges and added-token ids.
    tj["decoder"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                     "use_regex": False}
    tj["model"]["continuing_subword_prefix"] = ""
    tj["model"]["end_of_word_suffix"] = ""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tj, f, indent=2, ensure_ascii=False)
        f.write("\n")
    write_tokenizer_config(args.out, tok)
    check_tokenizer(args.out, text)


def check_tokenizer(out_dir, text):
    """The saved files load through transformers and round-trip text exactly."""
    from transformers import AutoTokenizer

    tk = AutoTokenizer.from_pretrained(out_dir)
    sample = text[:20000] + " caf\u00e9 \U0001F600 12345 <|im_start|>x<think>"
    ids = tk.encode(sample, add_special_tokens=False)
    if tk.decode(ids) != sample:
        raise SystemExit("tokenizer does not round-trip the sample text")
    chat = tk.apply_chat_template([{"role": "user", "content": "Who made the heaven?"}], tokenize=False,
                                  add_generation_prompt=True, enable_thinking=False)
    log("tokenizer: %d tokens (%d BPE + %d added); corpus %d chars -> %d tokens; chat sample %r" % (
        len(tk), tk.backend_tokenizer.get_vocab_size(with_added_tokens=False), len(ADDED_TOKENS),
        len(text), len(tk.backend_tokenizer.encode(text).ids), chat))


# ---------------------------------------------------------------- model


def model_config(args, tok):
    from transformers import Qwen3Config

    eot = tok.token_to_id("<|endoftext|>")
    im_end = tok.token_to_id("<|im_end|>")
    return Qwen3Config(
        vocab_size=tok.get_vocab_size(with_added_tokens=True),
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        hidden_act="silu",
        max_position_embeddings=512,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        tie_word_embeddings=True,
        attention_bias=False,
        attention_dropout=0.0,
        initializer_range=0.02,
        use_cache=True,
        bos_token_id=eot,
        eos_token_id=im_end,
        pad_token_id=eot,
    )


def generation_config(tok):
    from transformers import GenerationConfig

    eot = tok.token_to_id("<|endoftext|>")
    im_end = tok.token_to_id("<|im_end|>")
    # Qwen3's sampling defaults; reference outputs pass do_sample=False explicitly.
    return GenerationConfig(bos_token_id=eot, eos_token_id=[im_end, eot], pad_token_id=eot,
                            do_sample=True, temperature=0.6, top_k=20, top_p=0.95)


def save_model(model, tok, out_dir, dtype):
    """save_pretrained in the storage dtype, from a copy so training goes on in fp32."""
    import copy

    m = copy.deepcopy(model).to(dtype)
    m.generation_config = generation_config(tok)
    tmp = out_dir + ".tmp-save"
    shutil.rmtree(tmp, ignore_errors=True)
    m.save_pretrained(tmp, safe_serialization=True)
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        os.replace(os.path.join(tmp, name), os.path.join(out_dir, name))
    shutil.rmtree(tmp, ignore_errors=True)


def stage_train(args, text):
    import numpy as np
    import torch
    from tokenizers import Tokenizer
    from transformers import Qwen3ForCausalLM

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    tok = Tokenizer.from_file(os.path.join(args.out, "tokenizer.json"))
    ids = np.array(tok.encode(text).ids, dtype=np.int64)
    train_ids, val_ids = split_ids(ids)
    log("corpus: %d tokens (train %d, held-out tail %d)" % (len(ids), len(train_ids), len(val_ids)))

    cfg = model_config(args, tok)
    model = Qwen3ForCausalLM(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    log("model: %d parameters, %s" % (n_params, json.dumps({k: getattr(cfg, k) for k in (
        "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "vocab_size")})))

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    ckpt_path = os.path.join(args.work, "train_state.pt")
    step0 = 0
    if args.resume and os.path.exists(ckpt_path):
        st = torch.load(ckpt_path, weights_only=False)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step0 = st["step"]
        rng = np.random.default_rng(args.seed + step0)
        log("resumed at step %d" % step0)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        frac = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))

    def batch(src, n):
        starts = rng.integers(0, len(src) - args.seq - 1, size=n)
        x = np.stack([src[s:s + args.seq + 1] for s in starts])
        return torch.from_numpy(x)

    def val_loss():
        loss = heldout_loss(model, val_ids, args.seq, args.autocast)
        model.train()
        return loss

    os.makedirs(args.work, exist_ok=True)
    model.train()
    t0 = time.time()
    loss_ema = None
    step = step0
    for step in range(step0, args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x = batch(train_ids, args.batch)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast):
            loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_ema = loss.item() if loss_ema is None else 0.95 * loss_ema + 0.05 * loss.item()
        done = step + 1
        if done % 25 == 0:
            el = time.time() - t0
            log("step %d/%d loss %.3f lr %.2e %.2fs/step %.0f tok/s" % (
                done, args.steps, loss_ema, lr_at(step), el / (done - step0),
                (done - step0) * args.batch * args.seq / el))
        if done % args.save_every == 0 or done == args.steps:
            vl = val_loss()
            save_model(model, tok, args.out, args.dtype_t)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": done}, ckpt_path)
            with open(os.path.join(args.work, "train_summary.json"), "w") as f:
                json.dump({"step": done, "train_loss_ema": loss_ema, "val_loss": vl,
                           "minutes": (time.time() - t0) / 60, "parameters": n_params}, f)
            log("saved step %d: held-out loss %.3f; sample: %r" % (
                done, vl, greedy_text(model, tok, "In the beginning", 32)))
        if args.max_minutes and time.time() - t0 > args.max_minutes * 60:
            log("time budget reached at step %d" % done)
            save_model(model, tok, args.out, args.dtype_t)
            break
    log("training done: %d steps in %.1f min" % (step + 1 - step0, (time.time() - t0) / 60))


def split_ids(ids):
    """Training ids and the held-out tail (the last 1% of the corpus, in Revelation)."""
    n_val = len(ids) // 100
    return ids[:-n_val], ids[-n_val:]


def heldout_loss(model, val_ids, seq, autocast):
    """Mean next-token cross-entropy (nats) over 16 windows of the held-out tail."""
    import torch

    model.eval()
    losses = []
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        for s in range(0, len(val_ids) - seq - 1, seq * 4)[:16]:
            x = torch.from_numpy(val_ids[s:s + seq + 1][None])
            losses.append(model(input_ids=x, labels=x).loss.item())
    return sum(losses) / len(losses)


def greedy_text(model, tok, prompt, n):
    import torch

    was_training = model.training
    model.eval()
    x = torch.tensor([tok.encode(prompt).ids])
    with torch.no_grad():
        out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=n,
                             do_sample=False, eos_token_id=None, pad_token_id=0)
    if was_training:
        model.train()
    return tok.decode(out[0, x.shape[1]:].tolist(), skip_special_tokens=False)


# ---------------------------------------------------------------- reference


def stage_reference(args):
    """HF greedy continuations from the SAVED weights, loaded back as float32."""
    import torch
    from make_qwen3_fixtures import hf_greedy
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    torch.set_num_threads(args.threads)
    tk = AutoTokenizer.from_pretrained(args.out)
    model = Qwen3ForCausalLM.from_pretrained(args.out, dtype=torch.float32,
                                             attn_implementation="eager")
    model.eval()
    prompts = []
    for text in REFERENCE_PROMPTS:
        ids = tk.encode(text, add_special_tokens=False)
        greedy, margin = hf_greedy(model, ids, 64)
        prompts.append({"text": text, "ids": ids, "greedy_ids": greedy,
                        "greedy_text": tk.decode(greedy, skip_special_tokens=False),
                        "min_greedy_margin": round(margin, 6)})
        log("reference %r -> %r" % (text, prompts[-1]["greedy_text"]))
    import numpy as np

    text = corpus_text(kjv_verses())
    _, val_ids = split_ids(np.array(tk.backend_tokenizer.encode(text).ids, dtype=np.int64))
    loss = heldout_loss(model, val_ids, args.seq, False)
    log("held-out loss of the saved weights (fp32): %.4f nats/token" % loss)
    st = os.path.join(args.out, "model.safetensors")
    ref = {
        "comment": "HF transformers Qwen3ForCausalLM (eager attention) greedy decoding (argmax through HF's KV cache, "
                   "64 new tokens, not stopped by eos) from the saved weights loaded back with "
                   "dtype=float32; computed in float32 on the CPU",
        "weights_dtype": args.dtype,
        "reference_compute": "float32",
        "max_new_tokens": 64,
        "heldout_loss_nats": round(loss, 4),
        "prompts": prompts,
    }
    with open(os.path.join(args.out, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
        f.write("\n")
    log("wrote reference.json (model.safetensors %d bytes)" % os.path.getsize(st))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", choices=["all", "tokenizer", "train", "reference"], default="all")
    ap.add_argument("--out", default="models/demo")
    ap.add_argument("--work", default="/tmp/nectar_demo_train", help="resumable training state")
    ap.add_argument("--vocab", type=int, default=4096, help="total vocabulary incl. 5 added tokens")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--intermediate", type=int, default=688)
    ap.add_argument("--layers", type=int, default=5)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=1600)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--max-minutes", type=float, default=35,
                    help="stop training after this long (0: no limit)")
    ap.add_argument("--dtype", choices=["bfloat16", "float16"], default="bfloat16",
                    help="storage dtype of model.safetensors")
    ap.add_argument("--autocast", action=argparse.BooleanOptionalAction, default=True,
                    help="bf16 autocast for the matmuls (fp32 master weights)")
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()

    import torch
    args.dtype_t = getattr(torch, args.dtype)
    text = corpus_text(kjv_verses())
    if args.stage in ("all", "tokenizer"):
        stage_tokenizer(args, text)
    if args.stage in ("all", "train"):
        stage_train(args, text)
    if args.stage in ("all", "reference"):
        stage_reference(args)


if __name__ == "__main__":
    sys.exit(main())
