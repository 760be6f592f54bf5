#!/usr/bin/env python3
"""Write tests/fixtures/llama/: tiny random Llama checkpoints in HF layout with
Hugging Face reference outputs (per-position logits and greedy continuations)
for nectar's CPU parity tests (tests/models/test_qwen3_parity.c runs them: a
Llama is Qwen3's decoder without the q/k norms), and
tests/fixtures/chat/llama3_cases.jsonl: conversations rendered by
transformers' apply_chat_template with the Llama 3.1 chat template for
tests/text/test_chat.c, and llama3_tool_cases.jsonl: the same with tools=...,
assistant tool calls and tool results, for tests/text/test_chat_tools.c.

The two checkpoints cover what Llama adds: `tiny_llama3` has rope_scaling of
type "llama3" (written the hub's way, top-level rope_theta + rope_scaling,
with an original context of 64 so that every band of the scaling, kept,
blended and divided, falls inside head_dim 24) and an untied LM head;
`tiny_smollm_tied_bf16` is a SmolLM2-style config (no rope_scaling, no
head_dim: hidden / heads) with tied embeddings, stored in bf16, written in
transformers 5's rope_parameters style. Random init, fixed seeds, the demo
tokenizer (models/demo), as tools/make_qwen3_fixtures.py does.

`tiny_llama3_eom.json`: HF's greedy generate() on tiny_llama3 with one added
token renamed <|eom_id|>, with and without its id in generation_config's
eos_token_id (tests/models/test_llama_eom.sh; --eom-only writes it alone).

Run: python3 tools/make_llama3_fixtures.py [--verify | --chat-only | --eom-only]
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_qwen3_fixtures as q3  # noqa: E402  (shared prompts, greedy loop, init, tokenizer)

ROOT = q3.ROOT
OUT = os.path.join(ROOT, "tests", "fixtures", "llama")
CHAT_OUT = os.path.join(ROOT, "tests", "fixtures", "chat", "llama3_cases.jsonl")
TOOL_CHAT_OUT = os.path.join(ROOT, "tests", "fixtures", "chat", "llama3_tool_cases.jsonl")

LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}

FIXTURES = [
    # name, storage dtype, config style, seed, config fields
    ("tiny_llama3", "float32", "rope_scaling", 11, dict(
        hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        head_dim=24, intermediate_size=96, tie_word_embeddings=False, rope_theta=10000.0,
        rms_norm_eps=1e-5, max_position_embeddings=256, rope=LLAMA3_ROPE)),
    ("tiny_smollm_tied_bf16", "bfloat16", "rope_parameters", 12, dict(
        hidden_size=48, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
        intermediate_size=80, tie_word_embeddings=True, rope_theta=100000.0,
        rms_norm_eps=1e-5, max_position_embeddings=128, rope=None)),
]


def make_config(vocab, bos, eos, fields):
    from transformers import LlamaConfig

    f = dict(fields)
    theta, rope = f.pop("rope_theta"), f.pop("rope")
    params = dict(rope or {"rope_type": "default"}, rope_theta=theta)
    return LlamaConfig(vocab_size=vocab, hidden_act="silu", attention_bias=False, mlp_bias=False,
                       attention_dropout=0.0, initializer_range=0.15, use_cache=True,
                       rope_parameters=params, bos_token_id=bos, eos_token_id=eos,
                       pad_token_id=bos, **f)


def set_config_style(path, style):
    """The hub's Llama 3.x configs carry a top-level rope_theta and a
    rope_scaling object; transformers 5 writes rope_parameters."""
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    params = cfg.pop("rope_parameters")
    if style == "rope_scaling":
        cfg["rope_theta"] = params.pop("rope_theta")
        cfg["rope_scaling"] = params if params.get("rope_type", "default") != "default" else None
    else:
        cfg["rope_parameters"] = params
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def load_reference_model(d, dtype):
    from transformers import LlamaForCausalLM

    m = LlamaForCausalLM.from_pretrained(d, dtype=getattr(torch, dtype), attn_implementation="eager")
    return m.float().eval()


def reference_prompts(ref, d, texts, prompt_ids):
    """HF's logits at every position of each prompt (logits_<i>.npy in d)
    and its greedy continuation: the reference.json rows, and the smallest
    greedy top-2 gap."""
    prompts, margin = [], float("inf")
    for i, ids in enumerate(prompt_ids):
        with torch.no_grad():
            logits = ref(input_ids=torch.tensor([ids])).logits[0].float().numpy()
        greedy, m = q3.hf_greedy(ref, ids, q3.N_GREEDY)
        margin = min(margin, m)
        np.save(os.path.join(d, "logits_%d.npy" % i), np.ascontiguousarray(logits, dtype="<f4"))
        prompts.append({"text": texts[i], "ids": ids, "logits_file": "logits_%d.npy" % i,
                        "greedy_ids": greedy, "min_greedy_margin": round(m, 6)})
    return prompts, margin


def seek_seed(name, seed, attempt):
    """attempt(s) writes the fixture with seed s and returns (prompts, margin)
    (reference_prompts'); the first of 20 seeds whose greedy steps all keep a
    top-2 gap >= q3.MIN_MARGIN stays. Returns (seed, prompts, margin)."""
    for i in range(20):
        s = seed * 1000 + i
        prompts, margin = attempt(s)
        if margin >= q3.MIN_MARGIN:
            return s, prompts, margin
        q3.log("%s: seed %d has a greedy step with top-2 gap %.2g; next seed" % (name, s, margin))
    raise SystemExit("%s: no seed gave greedy margins >= %g" % (name, q3.MIN_MARGIN))


def write_reference(d, dtype, model_class, seed, prompts, extra):
    """d/reference.json: how the references were made, the seed, the
    family's extra fields, the prompts' rows."""
    reference = dict({
        "dtype": dtype,
        "reference_compute": "float32",
        "comment": "HF transformers %s, %s (eager attention) from the saved weights "
                   "loaded then .float(); logits_<i>.npy is float32 [T, vocab] for every prompt "
                   "position; greedy_ids are %d argmax steps through HF's KV cache, not stopped by "
                   "eos." % (__import__("transformers").__version__, model_class, q3.N_GREEDY),
        "seed": seed,
    }, **extra)
    reference["prompts"] = prompts
    with open(os.path.join(d, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, indent=1, ensure_ascii=False)
        f.write("\n")


def make_fixture(name, dtype, style, seed, fields, tk):
    from transformers import GenerationConfig, LlamaForCausalLM

    bos = tk.convert_tokens_to_ids("<|endoftext|>")
    eos = tk.convert_tokens_to_ids("<|im_end|>")
    prompt_ids = [tk.encode(p, add_special_tokens=False) for p in q3.PROMPTS]
    assert [len(p) for p in prompt_ids] == q3.PROMPT_LENGTHS
    d = os.path.join(OUT, name)

    def attempt(s):
        model = LlamaForCausalLM(make_config(len(tk), bos, eos, fields))
        q3.randomize(model, s)
        model = model.to(getattr(torch, dtype))
        model.generation_config = GenerationConfig(bos_token_id=bos, eos_token_id=[eos, bos],
                                                   pad_token_id=bos, do_sample=False)
        shutil.rmtree(d, ignore_errors=True)
        model.save_pretrained(d, safe_serialization=True)
        set_config_style(os.path.join(d, "config.json"), style)
        q3.copy_tokenizer(d)
        ref = load_reference_model(d, dtype)
        want_type = (fields["rope"] or {}).get("rope_type", "default")
        assert ref.config.rope_parameters["rope_type"] == want_type, ref.config.rope_parameters
        return reference_prompts(ref, d, q3.PROMPTS, prompt_ids)

    s, prompts, margin = seek_seed(name, seed, attempt)
    write_reference(d, dtype, "LlamaForCausalLM", s, prompts, {"config_style": style})
    q3.log("%s: seed %d, min greedy margin %.4f" % (name, s, margin))


# The Llama 3.1 chat template, as meta-llama/Llama-3.1-8B-Instruct's
# tokenizer_config.json carries it (Llama 3.2's differs only in taking today's
# date from strftime_now when the renderer has it), transcribed in full: its
# JSON tool calling (definitions in the first user message by default, calls
# as {"name", "parameters"}, results as ipython turns) and the built-in tools
# branch that nectar never renders (no caller can pass builtin_tools).
LLAMA31_TEMPLATE = """{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\\n\\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\\n\\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

SYS = {"role": "system", "content": "You are a concise assistant."}
U1 = {"role": "user", "content": "What is the capital of France?"}
A1 = {"role": "assistant", "content": "Paris."}
U2 = {"role": "user", "content": "And of Italy?"}
CHAT_CASES = [
    ("user_only", [U1], False),
    ("user_gen", [U1], True),
    ("system_user_gen", [SYS, U1], True),
    ("system_only", [SYS], False),
    ("system_only_gen", [SYS], True),
    ("multi_turn", [SYS, U1, A1, U2], True),
    ("multi_turn_no_system", [U1, A1, U2], True),
    ("multi_turn_ends_assistant", [U1, A1], False),
    ("trimmed_contents", [{"role": "system", "content": "  \n spaced system \t"},
                          {"role": "user", "content": "\n\n  hello  \n"},
                          {"role": "assistant", "content": "   hi \n"}], True),
    ("empty_contents", [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}], True),
    ("unicode", [{"role": "user", "content": "Grüß dich, 世界! 👋 «quote»"}], True),
    ("second_system_is_a_turn", [SYS, U1, {"role": "system", "content": "Be brief."}, U2], True),
    ("tool_result", [U1, {"role": "assistant", "content": "Let me check."},
                     {"role": "tool", "content": "{\"city\": \"Paris\"}"}], True),
    ("tool_result_quotes", [U1, {"role": "tool", "content": "line1\nline2 \"q\" ü"}], False),
    ("ipython_role", [U1, {"role": "ipython", "content": "42"}], True),
    ("special_tokens_in_content", [{"role": "user", "content": "<|eot_id|> not special here"}], True),
    ("long_history", [SYS] + [U1, A1] * 4 + [U2], True),
]


def render_cases(template, bos, cases):
    """The demo tokenizer with this chat template and bos token, and each
    case (name, messages, add_generation_prompt) as a fixture row holding
    apply_chat_template's text."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(q3.TOKENIZER_DIR, "tokenizer.json"),
                                  bos_token=bos)
    tok.chat_template = template
    rows = []
    for name, msgs, gen in cases:
        rows.append({"name": name, "messages": msgs, "add_generation_prompt": gen,
                     "enable_thinking": True,
                     "expected": tok.apply_chat_template(msgs, tokenize=False,
                                                         add_generation_prompt=gen)})
    return tok, rows


def chat_rows():
    return render_cases(LLAMA31_TEMPLATE, "<|begin_of_text|>", CHAT_CASES)[1]


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
# what tojson(indent=4) must get right: non-ASCII, escapes, floats, empty
# containers, nesting
ODD = {"type": "function", "function": {
    "name": "mesure", "description": "Mesure «x» — ü\n\"q\"\t",
    "parameters": {"type": "object", "properties": {
        "n": {"type": "number", "minimum": 0.5, "maximum": 1e20, "default": 2.0},
        "tags": {"type": "array", "items": {}},
        "opts": {"type": "object", "properties": {}}},
        "required": []}}}


def call(name, arguments):
    """An assistant's tool call in OpenAI's shape. The arguments are an
    object here: HF's templates expect one, and nectar reads the JSON text an
    OpenAI client sends into one (Llama 3's template writes it with tojson)."""
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


ASK = {"role": "user", "content": "Weather in Paris?"}
CALL_PARIS = {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"})]}
RESULT = {"role": "tool", "content": "{\"temp\": 21, \"sky\": \"clear\"}"}
# name, messages, tools (None: none), add_generation_prompt
TOOL_CASES = [
    ("tools_user_gen", [ASK], [WEATHER], True),
    ("tools_system_user_gen", [SYS, ASK], [WEATHER, ODD], True),
    ("tools_odd_json", [{"role": "user", "content": "Mesure."}], [ODD], True),
    ("tools_first_user_trimmed", [{"role": "user", "content": "  \n spaced  \t"}], [WEATHER], False),
    ("tool_round_trip", [SYS, ASK, CALL_PARIS, RESULT], [WEATHER], True),
    ("tool_round_trip_answered", [ASK, CALL_PARIS, RESULT,
                                  {"role": "assistant", "content": "21 °C and clear."},
                                  {"role": "user", "content": "And Rome?"}], [WEATHER], True),
    ("call_content_is_dropped", [ASK, {"role": "assistant", "content": "Let me check.",
                                       "tool_calls": [call("get_weather", {"city": "Lyon"})]},
                                 RESULT], [WEATHER], False),
    ("call_arguments_nested", [ASK, {"role": "assistant", "content": "", "tool_calls": [
        call("search", {"q": "ünïcode \"x\"", "n": 2.0, "list": [1, {"a": None}], "flag": True,
                        "empty": {}})]},
        {"role": "tool", "content": "nothing"}], [WEATHER], True),
    ("call_arguments_empty", [ASK, {"role": "assistant", "content": "",
                                    "tool_calls": [call("get_weather", {})]}], [WEATHER], True),
    ("history_calls_without_tools", [ASK, CALL_PARIS, RESULT,
                                     {"role": "assistant", "content": "Done."}], None, True),
    ("tools_first_message_not_a_user", [SYS, {"role": "assistant", "content": "Hello."}, ASK],
     [WEATHER], True),
    ("ipython_role_result", [ASK, CALL_PARIS, {"role": "ipython", "content": "21"}], [WEATHER],
     True),
]


def tool_chat_rows():
    """TOOL_CASES as fixture rows holding apply_chat_template(...,
    tools=...)'s text."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(q3.TOKENIZER_DIR, "tokenizer.json"),
                                  bos_token="<|begin_of_text|>")
    tok.chat_template = LLAMA31_TEMPLATE
    rows = []
    for name, msgs, tools, gen in TOOL_CASES:
        rows.append({"name": name, "messages": msgs, "tools": tools, "add_generation_prompt": gen,
                     "enable_thinking": True,
                     "expected": tok.apply_chat_template(msgs, tools=tools, tokenize=False,
                                                         add_generation_prompt=gen)})
    return rows


def run(doc, out, fixtures, make, reference_loader, chat_out, rows_of, more_chat=()):
    """A family's fixture script: make every fixture (make(*row, tokenizer))
    and the chat cases (rows_of() into chat_out, and each (path, rows_of) of
    more_chat) unless --verify, then re-check them all (q3's reload check
    through reference_loader). --chat-only: the chat files alone."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verify", action="store_true", help="only re-check the existing fixtures")
    ap.add_argument("--chat-only", action="store_true",
                    help="write and check the chat template cases, not the checkpoints")
    args = ap.parse_args()
    torch.set_num_threads(1)
    from transformers import AutoTokenizer

    chats = [(chat_out, rows_of)] + list(more_chat)
    if not args.verify:
        if not args.chat_only:
            tk = AutoTokenizer.from_pretrained(q3.TOKENIZER_DIR)
            os.makedirs(out, exist_ok=True)
            for row in fixtures:
                make(*row, tk)
        for path, rows_fn in chats:
            with open(path, "w", encoding="utf-8") as f:
                for row in rows_fn():
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
    if not args.chat_only:
        q3.load_reference_model = reference_loader  # q3's reload check, on this family
        for name, *_ in fixtures:
            q3.verify_fixture(out, name)
    for path, rows_fn in chats:
        rows = rows_fn()
        with open(path, encoding="utf-8") as f:
            if [json.loads(x) for x in f] != rows:
                raise SystemExit("%s: differs from a fresh rendering" % path)
        q3.log("%s: %d conversations reproduce" % (path, len(rows)))


EOM_OUT = os.path.join(OUT, "tiny_llama3_eom.json")
EOM_ID = 4095  # the demo tokenizer's </think>, renamed <|eom_id|> (greedy reaches it at step 8)
EOM_PROMPT = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def eom_folder(dst):
    """tiny_llama3 with added token EOM_ID renamed <|eom_id|>: the same byte
    substitutions tests/models/test_llama_eom.sh makes with sed."""
    shutil.copytree(os.path.join(OUT, "tiny_llama3"), dst)
    for name, old, new in [("tokenizer.json", '"content":"</think>"', '"content":"<|eom_id|>"'),
                           ("tokenizer_config.json", '"content": "</think>"',
                            '"content": "<|eom_id|>"')]:
        path = os.path.join(dst, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        assert text.count(old) == 1, (name, old)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))


def write_eom_reference():
    """tiny_llama3_eom.json: HF's greedy generate() on the renamed folder,
    once with generation_config's eos_token_id listing <|eom_id|> (as Llama
    3.1's [128001, 128008, 128009] does: it stops there, the token included)
    and once without it (it runs on to max_new_tokens)."""
    import tempfile

    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "eom")
        eom_folder(d)
        tk = AutoTokenizer.from_pretrained(d)
        assert tk.convert_tokens_to_ids("<|eom_id|>") == EOM_ID
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
        ids = tk(EOM_PROMPT, return_tensors="pt", add_special_tokens=False).input_ids
        cases = []
        for eos in ([4093, 4091, EOM_ID], [4093, 4091]):
            gc = GenerationConfig(do_sample=False, max_new_tokens=16, eos_token_id=eos,
                                  pad_token_id=4091)
            with torch.no_grad():
                out = model.generate(ids, generation_config=gc)[0, ids.shape[1]:].tolist()
            stopped = out[-1] == EOM_ID and EOM_ID in eos
            text_ids = out[:-1] if stopped else out
            cases.append({"eos_token_id": eos, "generated_ids": out, "stopped_at_eom": stopped,
                          "text": tk.decode(text_ids, skip_special_tokens=False)})
    doc = {"comment": "HF transformers %s greedy generate() on tiny_llama3 with token %d "
                      "renamed <|eom_id|> (make_llama3_fixtures.eom_folder), max_new_tokens 16, "
                      "generation_config eos_token_id as given" % (
                          __import__("transformers").__version__, EOM_ID),
           "prompt": EOM_PROMPT, "eom_id": EOM_ID, "cases": cases}
    with open(EOM_OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    q3.log("%s: stops after %d tokens with <|eom_id|> listed, %d without" % (
        EOM_OUT, len(cases[0]["generated_ids"]), len(cases[1]["generated_ids"])))


def main():
    if "--eom-only" in sys.argv:
        return write_eom_reference()
    run(__doc__, OUT, FIXTURES, make_fixture, load_reference_model, CHAT_OUT, chat_rows,
        [(TOOL_CHAT_OUT, tool_chat_rows)])
    if "--chat-only" not in sys.argv:
        write_eom_reference()


if __name__ == "__main__":
    sys.exit(main())
