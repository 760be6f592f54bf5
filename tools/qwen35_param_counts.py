#!/usr/bin/env python3
"""Parameter counts of the Qwen3.5 text models at the shapes of nectar's
presets (src/models/presets.c: qwen3.5-0.8b, -2b, -4b, -9b), counted by HF
transformers itself: Qwen3_5ForCausalLM built on the meta device (no
weights allocated), every named parameter's numel summed. The numbers are
the reference tests/bench/test_bounds.c checks `nectar bounds` against.

    python3 tools/qwen35_param_counts.py
"""
import json

import torch
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

# name, hidden, intermediate, layers, heads, kv heads, linear k heads, linear v heads, tied
PRESETS = [
    ("qwen3.5-0.8b", 1024, 3584, 24, 8, 2, 16, 16, True),
    ("qwen3.5-2b", 2048, 6144, 24, 8, 2, 16, 16, True),
    ("qwen3.5-4b", 2560, 9216, 32, 16, 4, 16, 32, True),
    ("qwen3.5-9b", 4096, 12288, 32, 16, 4, 16, 32, False),
]


def main():
    out = {}
    for name, h, inter, layers, heads, kv, lk, lv, tied in PRESETS:
        cfg = Qwen3_5TextConfig(
            hidden_size=h, intermediate_size=inter, num_hidden_layers=layers,
            num_attention_heads=heads, num_key_value_heads=kv, head_dim=256, vocab_size=248320,
            linear_num_key_heads=lk, linear_num_value_heads=lv, linear_key_head_dim=128,
            linear_value_head_dim=128, linear_conv_kernel_dim=4, tie_word_embeddings=tied,
            full_attention_interval=4)
        with torch.device("meta"):
            model = Qwen3_5ForCausalLM(cfg)
        out[name] = sum(p.numel() for p in model.parameters())
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
