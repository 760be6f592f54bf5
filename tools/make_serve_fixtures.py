#!/usr/bin/env python3
"""Fixtures for the `nectar serve` tests (tests/fixtures/serve/).

Writes tests/fixtures/serve/fake/: a tiny byte-level BPE tokenizer trained
with HF `tokenizers` (Qwen2 split regex + ByteLevel, Qwen3's added tokens,
Qwen3's chat template copied into tokenizer_config.json) and the script that
the server's fake engine recites (src/engine/engine_script.c). Then
tests/fixtures/serve/expected.json: for a set of requests, what the server
must answer, computed here independently: prompts rendered and tokenized
by transformers' apply_chat_template / the HF tokenizer, the fake model's
rule re-implemented in numpy, text decoded by HF, reasoning split, stop
strings cut, logprobs from a float64 log-softmax.

Also tests/fixtures/serve/fake35/: the same tokenizer with a few added
tokens (each a piece of a Qwen3.5 tool call, so the script's tokens stay
distinct), Qwen3.5's chat template (tests/fixtures/qwen35/chat_template.jinja)
and a script that recites one Qwen3.5 tool call; its expected.json holds
the requests tools/test_server_agents.py --qwen35 sends and, for each, the
prompt's token count by transformers' apply_chat_template and the HF
tokenizer, so the server's rendering of tools and tool history is checked.

And tests/fixtures/serve/fake_llama3/: the same for Llama 3's JSON tool
calling (Llama 3.1's template, tools/make_llama3_fixtures.py; its header
tokens added as special tokens), whose script recites one Llama call, the
whole reply {"name": ..., "parameters": {...}}; its expected.json is read by
tools/test_server_agents.py --llama3.

Usage: python3 tools/make_serve_fixtures.py [--qwen3-tokenizer DIR]
       python3 tools/make_serve_fixtures.py --fake35-only | --fake-llama3-only
"""
import argparse
import copy
import json
import os

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from tokenizers import AddedToken
from transformers import PreTrainedTokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "serve")
FAKE = os.path.join(OUT, "fake")

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Every token of the script must be distinct (the fake engine checks it).
# The blanks inside <think> ... </think> exercise the server's trimming of
# the reasoning (leading blanks dropped, trailing ones dropped at </think>).
SCRIPT = ("<think> Planning a friendly reply. </think>\n\nHello from nectar's fake engine! "
          "It counts one two three four five six seven eight nine ten, then stops")

ADDED = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
         ("<think>", False), ("</think>", False)]

TOP_LOGIT, BUMP_LOGIT = 6.0, 3.0


def build_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    corpus = [SCRIPT.replace("<think>", "").replace("</think>", ""),
              "system user assistant\n", "You are a helpful assistant.\n", "\n\n", "\n\n"]
    tok.train_from_iterator(corpus, trainer)
    tok.add_tokens([AddedToken(t, special=s, normalized=False) for t, s in ADDED if not s])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, s in ADDED if s])
    return tok


def fnv1a(ids):
    h = 2166136261
    for v in ids:
        v &= 0xFFFFFFFF
        for b in range(4):
            h ^= (v >> (8 * b)) & 0xFF
            h = (h * 16777619) & 0xFFFFFFFF
    return h


class FakeModel:
    """The recital rule of engine_script.c, written again from its spec."""

    def __init__(self, hf, n_vocab):
        self.n_vocab = n_vocab
        self.script = hf.encode(SCRIPT, add_special_tokens=False)
        assert len(set(self.script)) == len(self.script), "script tokens are not distinct"
        self.eos = hf.convert_tokens_to_ids("<|im_end|>")

    def logits(self, history):
        out = np.zeros(self.n_vocab)
        last = history[-1]
        if last in self.script:
            i = self.script.index(last)
            nxt = self.script[i + 1] if i + 1 < len(self.script) else self.eos
        else:
            nxt = self.script[0]
        out[nxt] += TOP_LOGIT
        out[fnv1a(history) % self.n_vocab] += BUMP_LOGIT
        return out


def token_text(hf, i):
    """A token's text as the server reports it: its bytes, lossily UTF-8."""
    return hf.convert_tokens_to_string([hf.convert_ids_to_tokens(i)])


def generate(hf, model, prompt_ids, max_tokens, eog, n_top):
    hist = list(prompt_ids)
    out, lps = [], []
    finish = "length"
    for _ in range(max_tokens):
        lg = model.logits(hist)
        lse = np.log(np.sum(np.exp(lg - lg.max()))) + lg.max()
        nxt = int(np.argmax(lg))  # ties -> lowest id, like the sampler
        if nxt in eog:
            finish = "stop"
            break
        order = sorted(range(len(lg)), key=lambda v: (-lg[v], v))[:n_top]
        lps.append({"token": token_text(hf, nxt), "logprob": float(lg[nxt] - lse),
                    "top": [[token_text(hf, v), float(lg[v] - lse)] for v in order]})
        out.append(nxt)
        hist.append(nxt)
    return out, lps, finish


def split_reasoning(hf, ids, think_open, think_close):
    if ids and ids[0] == think_open and think_close in ids:
        k = ids.index(think_close)
        reasoning = hf.decode(ids[1:k]).strip(" \t\r\n")
        content = hf.decode(ids[k + 1:]).lstrip(" \t\r\n")
        return reasoning, content
    if ids and ids[0] == think_open:
        return hf.decode(ids[1:]).strip(" \t\r\n"), ""
    return None, hf.decode(ids)


def apply_stop(hf, ids, stops):
    """Fewest tokens whose text contains a stop string; the text before it."""
    if not stops:
        return None
    for k in range(1, len(ids) + 1):
        text = hf.decode(ids[:k])
        hits = [text.find(s) for s in stops if s in text]
        if hits:
            return k, text[:min(hits)]
    return None


def case(hf, model, name, endpoint, body, think_ids):
    eog = {model.eos, hf.convert_tokens_to_ids("<|endoftext|>")}
    if endpoint == "chat":
        # Text parts are concatenated (OpenAI's meaning of a parts array).
        msgs = [dict(m, content=m["content"] if isinstance(m["content"], str)
                     else "".join(p["text"] for p in m["content"])) for m in body["messages"]]
        text = hf.apply_chat_template(
            msgs, tokenize=False, add_generation_prompt=True,
            enable_thinking=body.get("chat_template_kwargs", {}).get("enable_thinking", True))
        prompt_ids = hf.encode(text, add_special_tokens=False)
    elif isinstance(body["prompt"], list):
        prompt_ids = list(body["prompt"])
    else:
        prompt_ids = hf.encode(body["prompt"], add_special_tokens=False)
    max_tokens = body.get("max_tokens", 4096 - len(prompt_ids))
    n_top = body.get("top_logprobs", 0) if endpoint == "chat" else body.get("logprobs", 0) or 0
    ids, lps, finish = generate(hf, model, prompt_ids, max_tokens, eog, n_top)
    stops = body.get("stop")
    if isinstance(stops, str):
        stops = [stops]
    reasoning = None
    cut = apply_stop(hf, ids, stops) if endpoint == "completions" else None
    if cut:
        k, content = cut
        ids, lps, finish = ids[:k], lps[:k], "stop"
    elif endpoint == "chat":
        reasoning, content = split_reasoning(hf, ids, *think_ids)
        if stops:
            for k in range(1, len(ids) + 1):
                _, c = split_reasoning(hf, ids[:k], *think_ids)
                hits = [c.find(s) for s in stops if s in c]
                if hits:
                    ids, lps, finish = ids[:k], lps[:k], "stop"
                    content = c[:min(hits)]
                    reasoning, _ = split_reasoning(hf, ids, *think_ids)
                    break
    else:
        content = hf.decode(ids)
    return {"name": name, "endpoint": endpoint, "body": body,
            "expect": {"content": content, "reasoning_content": reasoning,
                       "finish_reason": finish, "prompt_tokens": len(prompt_ids),
                       "completion_tokens": len(ids),
                       "logprobs": lps if (body.get("logprobs")) else None}}


FAKE35 = os.path.join(OUT, "fake35")
# The Qwen3.5 call the fake35 engine recites: get_weather(city="Paris", days=3).
CALL35 = ["<tool_call>", "\n<function=get_weather>\n<parameter=city>\n", "Paris",
          "\n</parameter>\n<parameter=days>\n", "3", "\n</parameter>\n</function>\n",
          "</tool_call>"]
WEATHER35 = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city", "days"]}}}
TIME35 = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {
        "zone": {"type": "string"}}, "required": ["zone"]}}}


# What the call-reciting engines' agent tests ask, and the call in history.
ASK = [{"role": "system", "content": "Be brief."},
       {"role": "user", "content": "Weather in Paris for 3 days?"}]
CALL_1 = {"id": "call_1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 3}"}}


def requests35():
    """The conversations the --qwen35 agent test sends: (name, body)."""
    ask, call = ASK, CALL_1
    history = ask + [
        {"role": "assistant", "content": None, "reasoning_content": "Call the tool.",
         "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\": \"clear\"}"},
        {"role": "tool", "tool_call_id": "call_2", "content": "second result"},
        {"role": "assistant", "content": "Clear skies."},
        {"role": "user", "content": "And tomorrow?"}]
    off = {"enable_thinking": False}
    return [
        ("auto_tools", {"messages": ask, "tools": [WEATHER35, TIME35], "chat_template_kwargs": off}),
        ("history", {"messages": history, "tools": [WEATHER35, TIME35], "chat_template_kwargs": off}),
        ("history_preserve_thinking",
         {"messages": history, "tools": [WEATHER35],
          "chat_template_kwargs": {"enable_thinking": False, "preserve_thinking": True}}),
        ("tool_choice_none", {"messages": ask, "chat_template_kwargs": off}),
    ]


def write_fake35():
    """fake35/: the fake tokenizer plus the call's pieces, Qwen3.5's template."""
    os.makedirs(FAKE35, exist_ok=True)
    tok = Tokenizer.from_file(os.path.join(FAKE, "tokenizer.json"))
    tok.add_tokens([AddedToken(t, special=False, normalized=False)
                    for t in ["<tool_call>", "</tool_call>"] + [p for p in CALL35 if "\n" in p]])
    tok.save(os.path.join(FAKE35, "tokenizer.json"))
    with open(os.path.join(ROOT, "tests", "fixtures", "qwen35", "chat_template.jinja")) as f:
        template = f.read()
    with open(os.path.join(FAKE, "tokenizer_config.json")) as f:
        config = json.load(f)
    config["chat_template"] = template
    with open(os.path.join(FAKE35, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(FAKE35, "fake_script.txt"), "w") as f:
        f.write("".join(CALL35))
    hf = PreTrainedTokenizerFast(tokenizer_file=os.path.join(FAKE35, "tokenizer.json"),
                                 eos_token="<|im_end|>", pad_token="<|endoftext|>")
    hf.chat_template = template
    script = hf.encode("".join(CALL35), add_special_tokens=False)
    assert len(set(script)) == len(script), "fake35: the script's tokens are not distinct"
    write_requests(FAKE35, hf, requests35(), len(script))


def write_requests(folder, hf, requests, n_script):
    """folder/expected.json: the recited call and each request (name, body)
    with its prompt's token count by apply_chat_template and the HF
    tokenizer (the call arguments given to the template as a mapping, as
    HF's templates expect)."""
    rows = []
    for name, body in requests:
        msgs = copy.deepcopy(body["messages"])
        for m in msgs:
            for c in m.get("tool_calls") or []:
                c["function"] = dict(c["function"], arguments=json.loads(c["function"]["arguments"]))
        text = hf.apply_chat_template(msgs, tools=body.get("tools"), tokenize=False,
                                      add_generation_prompt=True,
                                      **body.get("chat_template_kwargs", {}))
        rows.append({"name": name, "body": body,
                     "prompt_tokens": len(hf.encode(text, add_special_tokens=False))})
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump({"call": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
                   "requests": rows}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {folder} (script {n_script} tokens, {len(rows)} requests)")


FAKE_LLAMA3 = os.path.join(OUT, "fake_llama3")
# The Llama call the fake_llama3 engine recites, in pieces that become added
# tokens so that the script's tokens stay distinct.
CALL_LLAMA3 = ["{\"name\": \"get_weather\", \"parameters\": {\"city\": ", "\"Paris\"",
               ", \"days\": ", "3", "}}"]
LLAMA3_SPECIAL = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                  "<|eom_id|>", "<|python_tag|>"]


def requests_llama3():
    """The conversations the --llama3 agent test sends: (name, body)."""
    ask, call = ASK, CALL_1
    history = ask + [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\": \"clear\"}"},
        {"role": "assistant", "content": "Clear skies."},
        {"role": "user", "content": "And tomorrow?"}]
    return [
        ("auto_tools", {"messages": ask, "tools": [WEATHER35, TIME35]}),
        ("history", {"messages": history, "tools": [WEATHER35, TIME35]}),
        ("tool_choice_none", {"messages": ask}),
    ]


def write_fake_llama3():
    """fake_llama3/: the fake tokenizer plus Llama 3's header tokens and the
    call's pieces, Llama 3.1's template."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_llama3_fixtures import LLAMA31_TEMPLATE

    os.makedirs(FAKE_LLAMA3, exist_ok=True)
    tok = Tokenizer.from_file(os.path.join(FAKE, "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in LLAMA3_SPECIAL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in CALL_LLAMA3])
    tok.save(os.path.join(FAKE_LLAMA3, "tokenizer.json"))
    with open(os.path.join(FAKE, "tokenizer_config.json")) as f:
        config = json.load(f)
    config["chat_template"] = LLAMA31_TEMPLATE
    config["bos_token"] = "<|begin_of_text|>"
    with open(os.path.join(FAKE_LLAMA3, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(FAKE_LLAMA3, "fake_script.txt"), "w") as f:
        f.write("".join(CALL_LLAMA3))
    hf = PreTrainedTokenizerFast(tokenizer_file=os.path.join(FAKE_LLAMA3, "tokenizer.json"),
                                 bos_token="<|begin_of_text|>", eos_token="<|im_end|>",
                                 pad_token="<|endoftext|>")
    hf.chat_template = LLAMA31_TEMPLATE
    script = hf.encode("".join(CALL_LLAMA3), add_special_tokens=False)
    assert len(script) == len(CALL_LLAMA3), "fake_llama3: the call's pieces are not one token each"
    write_requests(FAKE_LLAMA3, hf, requests_llama3(), len(script))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qwen3-tokenizer", default=os.path.join(ROOT, "tests", "fixtures",
                                                              "qwen3-tokenizer"))
    ap.add_argument("--fake35-only", action="store_true", help="only rewrite fake35/")
    ap.add_argument("--fake-llama3-only", action="store_true", help="only rewrite fake_llama3/")
    args = ap.parse_args()
    if args.fake35_only:
        return write_fake35()
    if args.fake_llama3_only:
        return write_fake_llama3()
    os.makedirs(FAKE, exist_ok=True)
    tok = build_tokenizer()
    tok.save(os.path.join(FAKE, "tokenizer.json"))
    with open(os.path.join(args.qwen3_tokenizer, "tokenizer_config.json")) as f:
        template = json.load(f)["chat_template"]
    config = {"add_bos_token": False, "add_prefix_space": False, "bos_token": None,
              "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "model_max_length": 4096, "tokenizer_class": "Qwen2Tokenizer",
              "chat_template": template}
    with open(os.path.join(FAKE, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(FAKE, "fake_script.txt"), "w") as f:
        f.write(SCRIPT)

    hf = PreTrainedTokenizerFast(tokenizer_file=os.path.join(FAKE, "tokenizer.json"),
                                 eos_token="<|im_end|>", pad_token="<|endoftext|>")
    hf.chat_template = template
    n_vocab = len(hf)
    model = FakeModel(hf, n_vocab)
    think = (hf.convert_tokens_to_ids("<think>"), hf.convert_tokens_to_ids("</think>"))
    hi = [{"role": "user", "content": "Hi there"}]
    cases = [
        case(hf, model, "chat_thinking", "chat", {"messages": hi, "temperature": 0}, think),
        case(hf, model, "chat_no_thinking", "chat",
             {"messages": [{"role": "system", "content": "You are a helpful assistant."}] + hi,
              "temperature": 0, "chat_template_kwargs": {"enable_thinking": False}}, think),
        case(hf, model, "chat_logprobs", "chat",
             {"messages": hi, "temperature": 0, "max_tokens": 5, "logprobs": True,
              "top_logprobs": 3}, think),
        case(hf, model, "chat_stop", "chat",
             {"messages": [{"role": "user", "content": [{"type": "text", "text": "Count"},
                                                        {"type": "text", "text": " please"}]}],
              "temperature": 0, "stop": [" six", "nine"],
              "chat_template_kwargs": {"enable_thinking": False}}, think),
        case(hf, model, "completion", "completions",
             {"prompt": "It counts one two", "temperature": 0}, think),
        case(hf, model, "completion_length", "completions",
             {"prompt": "It counts one two", "temperature": 0, "max_tokens": 3}, think),
        case(hf, model, "completion_stop_span", "completions",
             {"prompt": "It counts one two", "temperature": 0, "stop": "r fi"}, think),
        case(hf, model, "completion_token_ids", "completions",
             {"prompt": hf.encode("It counts one two", add_special_tokens=False),
              "temperature": 0, "max_tokens": 4}, think),
        case(hf, model, "completion_logprobs", "completions",
             {"prompt": "Hello from", "temperature": 0, "max_tokens": 4, "logprobs": 2}, think),
    ]
    # Eight different prompts for the concurrency test.
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight"]
    for i, w in enumerate(words):
        cases.append(case(hf, model, f"parallel_{i}", "completions",
                          {"prompt": f"Request {i} counts {w}", "temperature": 0}, think))
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump({"n_vocab": n_vocab, "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {FAKE} (vocab {n_vocab}, script {len(model.script)} tokens) and "
          f"{len(cases)} cases")
    write_fake35()
    write_fake_llama3()


if __name__ == "__main__":
    main()
