#!/usr/bin/env python3
"""Write tests/fixtures/gemma3/: tiny random Gemma 3 checkpoints in HF layout
with Hugging Face reference outputs (per-position logits and greedy
continuations) for nectar's CPU parity tests (tests/models/test_gemma3.c),
and tests/fixtures/chat/gemma3_cases.jsonl: conversations rendered by
transformers' apply_chat_template with Gemma 3's chat template
(google/gemma-3-4b-it's tokenizer_config.json) for tests/text/test_chat.c.

The three checkpoints cover what Gemma 3 adds over Qwen3's layer: sliding
window layers mixed with global ones (every window is shorter than the
longer prompts, so the local masking matters; >= 2 local and >= 1 global
layers), two RoPE bases, q/k norms, RMSNorm weights stored as w (scaled by
1 + w), the four norms of a layer, GeGLU with tanh GELU, the embedding
scaled by sqrt(hidden) and query_pre_attn_scalar:

- `tiny_gemma3_text` (fp32, untied): the hub's 4.x config spelling
  (rope_theta, rope_local_base_freq, rope_scaling linear factor 2 on the
  global layers, sliding_window_pattern 3, no layer_types),
  query_pre_attn_scalar != head_dim, final_logit_softcapping set.
- `tiny_gemma3_text_bf16` (bf16, tied): transformers 5's spelling
  (layer_types, not in the default pattern; rope_parameters per layer type);
  hidden 48, so sqrt(hidden) rounds in bf16 as HF's embedding scale does.
- `tiny_gemma3_mm` (fp32, tied): the hub's multimodal layout, model_type
  "gemma3" with text_config, Gemma3ForConditionalGeneration's weights
  (model.language_model.*, a tiny SigLIP vision tower nectar never reads).

Vocabulary 1536 (the demo tokenizer's first ids, models/demo, copied in):
the prompts' ids are all below it, and it keeps each folder under 1 MB.
Random init, fixed seeds; norm weights from [-0.5, 0.5) (effective scale
1 + w), so a norm read as w, not 1 + w, shows.

Run: python3 tools/make_gemma3_fixtures.py [--verify]
"""

import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_llama3_fixtures as l3  # noqa: E402  (the script's steps, the chat messages)
import make_qwen3_fixtures as q3  # noqa: E402  (greedy loop, tokenizer copy, margins)

ROOT = q3.ROOT
OUT = os.path.join(ROOT, "tests", "fixtures", "gemma3")
CHAT_OUT = os.path.join(ROOT, "tests", "fixtures", "chat", "gemma3_cases.jsonl")

VOCAB = 1536
PROMPTS = [
    "In",
    "And God said, Let there be",
    "And God said, Let there be light: and there was light. And God saw the light, that it was good",
]
PROMPT_LENGTHS = [1, 7, 24]
BOS, EOS, PAD = 2, 1, 0  # Gemma's ids (pad 0, eos 1, bos 2)

FIXTURES = [
    # name, storage dtype, layout / config spelling, seed, text config fields
    ("tiny_gemma3_text", "float32", "hub_text", 21, dict(
        hidden_size=32, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=64, tie_word_embeddings=False, sliding_window=4,
        sliding_window_pattern=3, rope_theta=1000000.0, rope_local_base_freq=10000.0,
        rope_scaling={"rope_type": "linear", "factor": 2.0}, query_pre_attn_scalar=24,
        final_logit_softcapping=5.0, rms_norm_eps=1e-6, max_position_embeddings=256)),
    ("tiny_gemma3_text_bf16", "bfloat16", "v5_text", 22, dict(
        hidden_size=48, num_hidden_layers=4, num_attention_heads=2, num_key_value_heads=1,
        head_dim=32, intermediate_size=80, tie_word_embeddings=True, sliding_window=5,
        layer_types=["sliding_attention", "full_attention", "sliding_attention",
                     "sliding_attention"],
        rope_theta=100000.0, rope_local_base_freq=10000.0, rope_scaling=None,
        query_pre_attn_scalar=32, final_logit_softcapping=None, rms_norm_eps=1e-6,
        max_position_embeddings=128)),
    ("tiny_gemma3_mm", "float32", "hub_multimodal", 23, dict(
        hidden_size=32, num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1,
        head_dim=16, intermediate_size=64, tie_word_embeddings=True, sliding_window=3,
        sliding_window_pattern=3, rope_theta=1000000.0, rope_local_base_freq=10000.0,
        rope_scaling=None, query_pre_attn_scalar=16, final_logit_softcapping=None,
        rms_norm_eps=1e-6, max_position_embeddings=128)),
]


def text_config(fields):
    from transformers import Gemma3TextConfig

    f = dict(fields)
    pattern = f.pop("sliding_window_pattern", None)
    theta, local = f.pop("rope_theta"), f.pop("rope_local_base_freq")
    scaling = f.pop("rope_scaling")
    full = dict(scaling or {"rope_type": "default"}, rope_theta=theta)
    params = {"full_attention": full,
              "sliding_attention": {"rope_type": "default", "rope_theta": local}}
    if pattern:
        f["layer_types"] = ["sliding_attention" if (i + 1) % pattern else "full_attention"
                            for i in range(f["num_hidden_layers"])]
    return Gemma3TextConfig(vocab_size=VOCAB, hidden_activation="gelu_pytorch_tanh",
                            attention_bias=False, attention_dropout=0.0, initializer_range=0.1,
                            use_cache=True, rope_parameters=params, bos_token_id=BOS,
                            eos_token_id=EOS, pad_token_id=PAD, attn_logit_softcapping=None,
                            **f)


def make_model(layout, fields):
    from transformers import Gemma3Config, Gemma3ForCausalLM, Gemma3ForConditionalGeneration
    from transformers import SiglipVisionConfig

    tc = text_config(fields)
    if layout != "hub_multimodal":
        return Gemma3ForCausalLM(tc)
    vc = SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                            num_attention_heads=2, image_size=28, patch_size=14)
    cfg = Gemma3Config(text_config=tc, vision_config=vc, mm_tokens_per_image=4,
                       boi_token_index=VOCAB - 3, eoi_token_index=VOCAB - 2,
                       image_token_index=VOCAB - 1, tie_word_embeddings=fields["tie_word_embeddings"])
    cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = BOS, [EOS, 106], PAD
    return Gemma3ForConditionalGeneration(cfg)


def randomize(model, seed):
    """Matrices normal(0, std); norm weights (stored as w, scaled by 1 + w)
    uniform in [-0.5, 0.5)."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(-0.5, 0.5)
            elif p.dim() >= 2:
                p.normal_(0.0, 0.1)
            else:
                p.normal_(0.0, 0.02)
        model.tie_weights()


def rewrite_config(path, layout, fields):
    """The hub's 4.x Gemma 3 configs: top-level rope_theta, rope_local_base_freq,
    rope_scaling and sliding_window_pattern (no layer_types); transformers 5
    writes layer_types and rope_parameters per layer type."""
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    tc = cfg["text_config"] if layout == "hub_multimodal" else cfg
    if layout in ("hub_text", "hub_multimodal"):
        params = tc.pop("rope_parameters")
        tc["rope_theta"] = params["full_attention"]["rope_theta"]
        tc["rope_local_base_freq"] = params["sliding_attention"]["rope_theta"]
        full = {k: v for k, v in params["full_attention"].items() if k != "rope_theta"}
        tc["rope_scaling"] = full if full.get("rope_type", "default") != "default" else None
        tc.pop("layer_types")
        tc["sliding_window_pattern"] = fields["sliding_window_pattern"]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def load_reference_model(d, dtype):
    from transformers import AutoConfig, Gemma3ForCausalLM, Gemma3ForConditionalGeneration

    cls = (Gemma3ForConditionalGeneration if AutoConfig.from_pretrained(d).model_type == "gemma3"
           else Gemma3ForCausalLM)
    m = cls.from_pretrained(d, dtype=getattr(torch, dtype), attn_implementation="eager")
    return m.float().eval()


def text_config_of(model):
    c = model.config
    return c.text_config if hasattr(c, "text_config") else c


def make_fixture(name, dtype, layout, seed, fields, tk):
    from transformers import GenerationConfig

    prompt_ids = [tk.encode(p, add_special_tokens=False) for p in PROMPTS]
    assert [len(p) for p in prompt_ids] == PROMPT_LENGTHS, [len(p) for p in prompt_ids]
    assert max(max(p) for p in prompt_ids) < VOCAB
    d = os.path.join(OUT, name)
    info = {}

    def attempt(s):
        model = make_model(layout, fields)
        randomize(model, s)
        model = model.to(getattr(torch, dtype))
        model.generation_config = GenerationConfig(bos_token_id=BOS, eos_token_id=[EOS, 106],
                                                   pad_token_id=PAD, do_sample=False)
        shutil.rmtree(d, ignore_errors=True)
        model.save_pretrained(d, safe_serialization=True)
        rewrite_config(os.path.join(d, "config.json"), layout, fields)
        q3.copy_tokenizer(d)
        ref = load_reference_model(d, dtype)
        tc = text_config_of(ref)
        kinds = tc.layer_types
        assert kinds.count("sliding_attention") >= 2 and kinds.count("full_attention") >= 1, kinds
        assert tc.sliding_window < PROMPT_LENGTHS[-1]
        info.update(cls=type(ref).__name__, extra={
            "layout": layout, "layer_types": kinds, "sliding_window": tc.sliding_window})
        return l3.reference_prompts(ref, d, PROMPTS, prompt_ids)

    s, prompts, margin = l3.seek_seed(name, seed, attempt)
    l3.write_reference(d, dtype, info["cls"], s, prompts, info["extra"])
    size = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))
    q3.log("%s: seed %d, min greedy margin %.4f, %d bytes" % (name, s, margin, size))


# Gemma 3's chat template (google/gemma-3-4b-it's tokenizer_config.json; the
# 270M and 1B instruction models carry the same one).
GEMMA3_TEMPLATE = (
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\\n'}}\n"
    "{%- endif -%}\n"
)

SYS, U1, A1, U2 = l3.SYS, l3.U1, l3.A1, l3.U2
# Llama 3's first eight: user alone, system + user, system alone, multi-turn,
# each with and without the generation prompt.
CHAT_CASES = l3.CHAT_CASES[:8] + [
    ("system_not_trimmed_contents_trimmed",
     [{"role": "system", "content": "  \n spaced system \t"},
      {"role": "user", "content": "\n\n  hello  \n"},
      {"role": "assistant", "content": "   hi \n"}], True),
    ("empty_contents", [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}], True),
    ("empty_system", [{"role": "system", "content": ""}, U1], True),
    ("unicode", [{"role": "user", "content": "Grüß dich, 世界! 👋 «quote»"}], True),
    # the template checks only that even turns are the user's: an odd turn of
    # another role is written with its own name
    ("odd_turn_other_role", [U1, {"role": "tool", "content": "{\"city\": \"Paris\"}"}], True),
    ("special_tokens_in_content", [{"role": "user", "content": "<end_of_turn> not special"}], True),
    ("long_history", [SYS] + [U1, A1] * 4 + [U2], True),
]
# Conversations the template refuses (raise_exception): nectar refuses them too.
CHAT_REFUSED = [
    ("assistant_first", [A1, U1]),
    ("two_users", [U1, U2]),
    ("second_system", [SYS, U1, A1, {"role": "system", "content": "Be brief."}]),
]


def chat_rows():
    tok, rows = l3.render_cases(GEMMA3_TEMPLATE, "<bos>", CHAT_CASES)
    for name, msgs in CHAT_REFUSED:
        try:
            tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        except Exception as e:  # the template's raise_exception (a jinja2 TemplateError)
            rows.append({"name": name, "messages": msgs, "add_generation_prompt": True,
                         "enable_thinking": True, "error": str(e)})
            continue
        raise SystemExit("chat case %s: the template did not refuse it" % name)
    return rows


def main():
    l3.run(__doc__, OUT, FIXTURES, make_fixture, load_reference_model, CHAT_OUT, chat_rows)


if __name__ == "__main__":
    sys.exit(main())
