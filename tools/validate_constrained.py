#!/usr/bin/env python3
"""Constrained output under sampling, through the official `openai` client:
`tool_choice: "required"` with 2, 3 and 4 tools, and a nested `json_schema`
response format, each run N times at temperature 1.0 with seeds 0..N-1
against `nectar serve` on loopback. Every answer is validated with the
`jsonschema` package (an implementation independent of nectar's grammar):

- a tool call must name one of the tools and its arguments must validate
  against that tool's `parameters`; `finish_reason` must be "tool_calls";
- a json_schema answer must parse and validate;
- an answer cut by max_tokens must say `finish_reason: "length"` and carry
  no tool_calls (a cut call is never passed off as a call).

Meant for random weights at a real shape (the worst case for a grammar: the
model itself knows nothing of JSON):

    build/nectar gen-random --like qwen3-0.6b /tmp/r06
    python3 tools/validate_constrained.py -m /tmp/r06 --runs 50

Prints one line per scenario and exits 1 if any answer was invalid.
"""
import argparse
import json
import subprocess
import sys
import time

import jsonschema
import openai

WORDS = ["search", "lookup", "weather", "translate"]


def tool(i):
    """Tool i: a required bounded string, a required enum, an optional
    bounded integer; tools differ in names and field names."""
    return {"type": "function", "function": {
        "name": WORDS[i],
        "description": f"tool {i}",
        "parameters": {
            "type": "object",
            "properties": {
                f"q{i}": {"type": "string", "maxLength": 12},
                "mode": {"type": "string", "enum": ["fast", "exact", "any"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 99},
            },
            "required": [f"q{i}", "mode"],
            "additionalProperties": False,
        }}}


NESTED = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 10},
        "kind": {"enum": ["a", "b", "c"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6},
                 "maxItems": 3},
        "point": {"type": "object",
                  "properties": {"x": {"type": "integer"}, "y": {"type": "boolean"}},
                  "required": ["x", "y"], "additionalProperties": False},
    },
    "required": ["name", "kind", "point"],
    "additionalProperties": False,
}


class Server:
    def __init__(self, nectar, model, threads):
        args = [nectar, "serve", "--port", "0", "-m", model]
        if threads:
            args += ["-t", str(threads)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        at = line.find("http://127.0.0.1:")
        if at < 0:
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line}")
        self.url = "http://127.0.0.1:%d/v1" % int(line[at + 17:].split()[0])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def check_tools(r, tools):
    ch = r.choices[0]
    calls = ch.message.tool_calls or []
    if ch.finish_reason == "length":
        return ("cut", None) if not calls else ("invalid", "length with tool_calls")
    if ch.finish_reason != "tool_calls" or not calls:
        return "invalid", f"finish_reason {ch.finish_reason}, {len(calls)} calls"
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for c in calls:
        if c.function.name not in by_name:
            return "invalid", f"unknown tool {c.function.name!r}"
        try:
            jsonschema.validate(json.loads(c.function.arguments), by_name[c.function.name])
        except (ValueError, jsonschema.ValidationError) as e:
            return "invalid", f"{c.function.name}({c.function.arguments}): {str(e)[:120]}"
    return "valid", None


def check_schema(r):
    ch = r.choices[0]
    if ch.finish_reason == "length":
        return "cut", None
    try:
        jsonschema.validate(json.loads(ch.message.content), NESTED)
    except (ValueError, TypeError, jsonschema.ValidationError) as e:
        return "invalid", f"{ch.message.content!r}: {str(e)[:120]}"
    return "valid", None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nectar", default="build/nectar")
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("--scenarios", default="tools2,tools3,tools4,json_schema")
    a = ap.parse_args()
    srv = Server(a.nectar, a.model, a.threads)
    client = openai.OpenAI(base_url=srv.url, api_key="none", max_retries=0, timeout=600)
    model = client.models.list().data[0].id
    msgs = [{"role": "user", "content": "Do what the tools allow with: weather in Oslo"}]
    bad = 0
    try:
        for sc in a.scenarios.split(","):
            counts = {"valid": 0, "cut": 0, "invalid": 0}
            first_bad, t0, toks = None, time.time(), 0
            for seed in range(a.runs):
                kw = dict(model=model, messages=msgs, temperature=a.temperature, seed=seed,
                          max_tokens=a.max_tokens)
                if sc.startswith("tools"):
                    tools = [tool(i) for i in range(int(sc[5:]))]
                    r = client.chat.completions.create(tools=tools, tool_choice="required", **kw)
                    verdict, why = check_tools(r, tools)
                else:
                    r = client.chat.completions.create(response_format={
                        "type": "json_schema",
                        "json_schema": {"name": "nested", "schema": NESTED, "strict": True}}, **kw)
                    verdict, why = check_schema(r)
                toks += r.usage.completion_tokens
                counts[verdict] += 1
                if verdict == "invalid" and not first_bad:
                    first_bad = f"seed {seed}: {why}"
            bad += counts["invalid"]
            print(f"{sc}: {counts['valid']} valid, {counts['cut']} cut by max_tokens "
                  f"(finish_reason length, no call), {counts['invalid']} invalid of {a.runs}; "
                  f"{toks} tokens in {time.time() - t0:.0f} s" +
                  (f"; first invalid: {first_bad}" if first_bad else ""), flush=True)
    finally:
        srv.stop()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
