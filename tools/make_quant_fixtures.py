#!/usr/bin/env python3
"""Reference logits for the quantized-format accuracy tests (tests/quant/).

Runs Hugging Face transformers' Qwen3ForCausalLM on the bundled demo model
(models/demo) in float32 on the CPU over a fixed King James text, and writes

  tests/fixtures/quant/demo_logits.npy   [N, vocab] float32 logits, one row per
                                         position (the next-token prediction)
  tests/fixtures/quant/demo_text.json    the token ids, N, and the SHA-256 of
                                         models/demo/model.safetensors they belong to

The test quantizes the demo model with nectar (q8, q4), runs the same ids and
compares: top-1 agreement and mean KL(reference || quantized) per position.
Rerun after the demo model is retrained:  python3 tools/make_quant_fixtures.py
"""
import hashlib
import json
import os
import sys

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "models", "demo")
OUT = os.path.join(ROOT, "tests", "fixtures", "quant")
N = 256

# Genesis 1:1-8, Psalm 23 and Ecclesiastes 3:1-8 (King James Version, public domain).
TEXT = (
    "In the beginning God created the heaven and the earth. And the earth was without form, "
    "and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the "
    "face of the waters. And God said, Let there be light: and there was light. And God saw the "
    "light, that it was good: and God divided the light from the darkness. And God called the "
    "light Day, and the darkness he called Night. And the evening and the morning were the first "
    "day. And God said, Let there be a firmament in the midst of the waters, and let it divide "
    "the waters from the waters. The LORD is my shepherd; I shall not want. He maketh me to lie "
    "down in green pastures: he leadeth me beside the still waters. He restoreth my soul: he "
    "leadeth me in the paths of righteousness for his name's sake. Yea, though I walk through the "
    "valley of the shadow of death, I will fear no evil: for thou art with me; thy rod and thy "
    "staff they comfort me. Thou preparest a table before me in the presence of mine enemies: "
    "thou anointest my head with oil; my cup runneth over. Surely goodness and mercy shall follow "
    "me all the days of my life: and I will dwell in the house of the LORD for ever. To every "
    "thing there is a season, and a time to every purpose under the heaven: A time to be born, "
    "and a time to die; a time to plant, and a time to pluck up that which is planted; A time to "
    "kill, and a time to heal; a time to break down, and a time to build up; A time to weep, and "
    "a time to laugh; a time to mourn, and a time to dance; A time to cast away stones, and a "
    "time to gather stones together; a time to embrace, and a time to refrain from embracing; A "
    "time to get, and a time to lose; a time to keep, and a time to cast away; A time to rend, "
    "and a time to sew; a time to keep silence, and a time to speak; A time to love, and a time "
    "to hate; a time of war, and a time of peace."
)


def main():
    tok = Tokenizer.from_file(os.path.join(DEMO, "tokenizer.json"))
    ids = tok.encode(TEXT, add_special_tokens=False).ids
    if len(ids) < N:
        sys.exit(f"text has {len(ids)} tokens, need {N}")
    ids = ids[:N]
    model = AutoModelForCausalLM.from_pretrained(DEMO, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float().numpy()
    with open(os.path.join(DEMO, "model.safetensors"), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    os.makedirs(OUT, exist_ok=True)
    np.save(os.path.join(OUT, "demo_logits.npy"), logits.astype(np.float32))
    with open(os.path.join(OUT, "demo_text.json"), "w") as f:
        json.dump({"comment": "HF transformers Qwen3ForCausalLM, float32, eager attention, on "
                   "models/demo; logits of every position in demo_logits.npy (float32)",
                   "model_sha256": sha, "n": N, "ids": ids}, f, indent=1)
    print(f"wrote {N} positions x {logits.shape[1]} logits, model sha256 {sha[:12]}")


if __name__ == "__main__":
    main()
