#!/usr/bin/env python3
"""Writes the expected outputs of `nectar run` and `nectar chat` on the tiny
random Qwen3 checkpoints in tests/fixtures/qwen3/, computed with Hugging Face
transformers (greedy generate, eager attention, float32) and tokenizers
(decode), into tests/fixtures/gen/e2e/:

  run_<model>_<k>.prompt    the raw prompt text (exact bytes)
  run_<model>_<k>.expected  HF's greedy continuation, stopped at eos or
                            N_RUN new tokens, decoded (special tokens kept)
  chat_<model>.in           user lines fed to `nectar chat --no-think`
  chat_<model>.expected     each reply (HF greedy on apply_chat_template of
                            the history so far, enable_thinking=False) + "\n"
  chat_think_<model>.expected  the reply to the first line with
                            enable_thinking=True (the template's default)

A case is kept only when every greedy step's top-1/top-2 logit gap is at
least MIN_GAP, so float rounding cannot flip a token.
Usage: python3 tools/make_gen_fixtures.py
"""
import os

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIX = os.path.join(ROOT, "tests", "fixtures", "qwen3")
OUT = os.path.join(ROOT, "tests", "fixtures", "gen", "e2e")
N_RUN = 24
N_CHAT = 16
MIN_GAP = 1e-3
RUN_PROMPTS = ["And God said, Let there be", "In the beginning", "Blessed are the poor"]
CHAT_TURNS = ["Who made the heaven and the earth?", "And what of the sea?",
              "Tell me of Moses.", "Where is Eden?"]


def greedy(model, ids, n_new, eos):
    """HF greedy decoding with the smallest top-1/top-2 gap seen."""
    out = model.generate(torch.tensor([ids]), max_new_tokens=n_new, do_sample=False,
                         eos_token_id=eos, pad_token_id=eos[0], output_scores=True,
                         return_dict_in_generate=True)
    new = out.sequences[0, len(ids):].tolist()
    gap = min((s[0].topk(2).values[0] - s[0].topk(2).values[1]).item() for s in out.scores)
    if new and new[-1] in eos:
        new = new[:-1]
    return new, gap


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in ["tiny_gqa2", "tiny_gqa4_tied"]:
        d = os.path.join(FIX, name)
        tok = AutoTokenizer.from_pretrained(d)
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                     attn_implementation="eager").eval()
        eos = [tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")]
        k = 0
        for prompt in RUN_PROMPTS:
            ids = tok(prompt, add_special_tokens=False)["input_ids"]
            new, gap = greedy(model, ids, N_RUN, eos)
            if gap < MIN_GAP:
                print(f"{name}: skipping run prompt {prompt!r} (gap {gap:.2g})")
                continue
            text = tok.decode(new, skip_special_tokens=False)
            base = os.path.join(OUT, f"run_{name}_{k}")
            with open(base + ".prompt", "w", encoding="utf-8", newline="") as f:
                f.write(prompt)
            with open(base + ".expected", "w", encoding="utf-8", newline="") as f:
                f.write(text)
            print(f"{name}: run {k} gap {gap:.3g} -> {text!r}")
            k += 1
        msgs, lines, replies = [], [], []
        for user in CHAT_TURNS:
            trial = msgs + [{"role": "user", "content": user}]
            ids = tok.apply_chat_template(trial, add_generation_prompt=True, enable_thinking=False,
                                          tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            new, gap = greedy(model, list(ids), N_CHAT, eos)
            if gap < MIN_GAP:
                print(f"{name}: skipping chat turn {user!r} (gap {gap:.2g})")
                continue
            reply = tok.decode(new, skip_special_tokens=False)
            if "\n" in reply or "<think>" in reply or "</think>" in reply:
                print(f"{name}: skipping chat turn {user!r} (reply {reply!r})")
                continue
            msgs = trial + [{"role": "assistant", "content": reply}]
            lines.append(user)
            replies.append(reply)
            if len(lines) == 2:
                break
        assert len(lines) == 2, f"{name}: fewer than two usable chat turns"
        with open(os.path.join(OUT, f"chat_{name}.in"), "w", encoding="utf-8") as f:
            f.write("".join(u + "\n" for u in lines))
        with open(os.path.join(OUT, f"chat_{name}.expected"), "w", encoding="utf-8",
                  newline="") as f:
            f.write("".join(r + "\n" for r in replies))
        print(f"{name}: chat {replies!r}")
        # thinking mode (the template's default): one turn, no empty think block
        ids = tok.apply_chat_template([{"role": "user", "content": lines[0]}],
                                      add_generation_prompt=True, enable_thinking=True,
                                      tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        new, gap = greedy(model, list(ids), N_CHAT, eos)
        assert gap >= MIN_GAP, f"{name}: thinking-mode turn too close to a tie ({gap})"
        reply = tok.decode(new, skip_special_tokens=False)
        with open(os.path.join(OUT, f"chat_think_{name}.expected"), "w", encoding="utf-8",
                  newline="") as f:
            f.write(reply + "\n")
        print(f"{name}: chat (thinking) {reply!r}")


if __name__ == "__main__":
    main()
