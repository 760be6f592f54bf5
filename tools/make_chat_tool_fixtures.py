#!/usr/bin/env python3
"""Writes tests/fixtures/chat/tool_cases.jsonl: conversations with tool
definitions, assistant tool calls and tool results, rendered by transformers'
apply_chat_template(..., tokenize=False) with the official Qwen3 template
(the tokenizer_config.json of a Qwen3 checkpoint or tokenizer folder).

    python3 tools/make_chat_tool_fixtures.py tests/fixtures/qwen3-tokenizer

Each row: name, messages (OpenAI/HF shape; tool_calls[].function.arguments
a JSON string, or an object where the case tests the template's tojson),
tools, add_generation_prompt, enable_thinking, expected.
"""
import argparse
import json
import os

from transformers import AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "chat", "tool_cases.jsonl")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
# Everything tojson must reproduce: non-ASCII, escapes, control bytes,
# floats in both notations, integers, booleans, null, empty containers.
ODD = {
    "type": "function",
    "function": {
        "name": "mesure_température",
        "description": "Mesure « précise »\n\twith \"quotes\", a back\\slash, \u0001 and 日本語 ✓",
        "parameters": {
            "type": "object",
            "properties": {
                "x": {"type": "number", "minimum": 0.5, "maximum": 1e16, "multipleOf": 1e-05},
                "y": {"type": "number", "default": 123.0, "exclusiveMinimum": -0.25},
                "z": {"type": "integer", "default": -7, "examples": [1, 2.5, 1e22, 0.0001]},
                "flag": {"type": "boolean", "default": False, "nullable": True, "const": None},
                "empty": {"type": "object", "properties": {}},
                "list": {"type": "array", "items": []},
            },
        },
        "strict": True,
    },
}
SEARCH = {
    "type": "function",
    "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
}


def call(name, args):
    return {"id": "call_" + name, "type": "function", "function": {"name": name, "arguments": args}}


CASES = [
    ("tools_user_gen", [{"role": "user", "content": "Weather in Paris?"}], [WEATHER], True, True),
    ("tools_system_user_nothink",
     [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Weather in Oslo?"}],
     [WEATHER, SEARCH], True, False),
    ("tools_odd_json", [{"role": "user", "content": "Mesure."}], [ODD], True, True),
    ("tool_round_trip",
     [{"role": "system", "content": "Be helpful."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}")]},
      {"role": "tool", "tool_call_id": "call_get_weather", "content": "{\"temp\": 21, \"sky\": \"clear\"}"}],
     [WEATHER], True, True),
    ("two_calls_two_results_then_answer",
     [{"role": "user", "content": "Paris and Rome?"},
      {"role": "assistant", "content": "Let me check both.",
       "tool_calls": [call("get_weather", "{\"city\":\"Paris\"}"),
                      call("get_weather", "{\"city\": \"Rome\", \"unit\": \"celsius\"}")]},
      {"role": "tool", "content": "18"},
      {"role": "tool", "content": "24"},
      {"role": "assistant", "content": "Paris 18, Rome 24."},
      {"role": "user", "content": "Thanks. And Oslo?"}],
     [WEATHER], True, True),
    ("call_arguments_as_object",
     [{"role": "user", "content": "Search ünïcode"},
      {"role": "assistant", "content": "", "tool_calls": [call("search", {"q": "ünïcode \"x\"", "n": 2.0})]},
      {"role": "tool", "content": "nothing"}],
     [SEARCH], True, False),
    ("reasoning_then_call_after_last_query",
     [{"role": "user", "content": "Weather in Lima?"},
      {"role": "assistant", "content": "", "reasoning_content": "I should call the tool.",
       "tool_calls": [call("get_weather", "{\"city\": \"Lima\"}")]},
      {"role": "tool", "content": "{\"temp\": 19}"}],
     [WEATHER], True, True),
    ("history_calls_without_tools",
     [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "", "tool_calls": [call("search", "{}")]},
      {"role": "tool", "content": "ok"},
      {"role": "assistant", "content": "Done."}],
     None, False, True),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tokenizer_dir", help="folder with the Qwen3 tokenizer_config.json")
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(args.tokenizer_dir)
    with open(OUT, "w", encoding="utf-8") as f:
        for name, messages, tools, gen, think in CASES:
            text = tok.apply_chat_template(messages, tools=tools, tokenize=False,
                                           add_generation_prompt=gen, enable_thinking=think)
            row = {"name": name, "messages": messages, "tools": tools, "add_generation_prompt": gen,
                   "enable_thinking": think, "expected": text}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
