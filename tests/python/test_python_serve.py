"""The Python package's OpenAI-shaped calls against `nectar serve` on the
same model and the same seeded requests: tools (tool_choice required and a
named function, streamed too), response_format json_schema, and logprobs
(chat and legacy completions) must come back with the same shape and the
same content from both, since both run the same C code (nc_chat_request /
src/gen). Structured output is also checked against its schema by an
independent validator (jsonschema when installed, else the small one
below), and logprobs against probability rules (each token's top list is
sorted, log p <= 0, the alternatives' probabilities sum to at most 1).

usage: test_python_serve.py DEMO_DIR BASE_URL
"""

import json
import math
import sys
import urllib.request

import nectar
from checks import check, exit_code

demo, base = sys.argv[1:3]


def post(path, body):
    req = urllib.request.Request(base + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        if not body.get("stream"):
            return json.loads(r.read())
        out = []
        for line in r.read().decode().split("\n"):
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[6:]))
        return out


def validate(value, schema, path="$"):
    """Errors of value against a JSON schema (the keywords used here)."""
    try:
        import jsonschema  # noqa: F401
        v = jsonschema.Draft202012Validator(schema)
        return ["%s: %s" % (path, e.message) for e in v.iter_errors(value)]
    except ImportError:
        pass
    errs = []
    types = {"object": dict, "array": list, "string": str, "boolean": bool,
             "integer": int, "number": (int, float), "null": type(None)}
    t = schema.get("type")
    if t and (not isinstance(value, types[t]) or
              (t in ("integer", "number") and isinstance(value, bool))):
        return ["%s: %r is not of type %s" % (path, value, t)]
    if "enum" in schema and value not in schema["enum"]:
        errs.append("%s: %r is not one of %r" % (path, value, schema["enum"]))
    if isinstance(value, dict):
        for k in schema.get("required", []):
            if k not in value:
                errs.append("%s: %r is required" % (path, k))
        props = schema.get("properties", {})
        for k, v in value.items():
            if k in props:
                errs += validate(v, props[k], path + "." + k)
            elif schema.get("additionalProperties") is False:
                errs.append("%s: %r is not allowed" % (path, k))
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            errs += validate(v, schema["items"], "%s[%d]" % (path, i))
    return errs


def shape(x):
    """The keys of a response, nested, with the server-only "timings" and
    the values that differ by design (ids, times) left out."""
    if isinstance(x, dict):
        return {k: shape(v) for k, v in x.items() if k not in ("timings",)}
    if isinstance(x, list):
        return [shape(v) for v in x[:1]]
    return type(x).__name__ if x is not None else None


def usage(r):
    """usage less the cached count, which depends on each side's history."""
    u = dict(r["usage"])
    u.pop("prompt_tokens_details")
    return u


def strip_ids(calls):
    return [{"type": c["type"], "function": c["function"]} for c in calls or []]


m = nectar.Model(demo, threads=1)
msgs = [{"role": "user", "content": "Weather in Paris?"}]
# small tools: the demo model's context is 512 tokens, the template's tool
# preamble alone about 250
weather = {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}},
           "required": ["city"]}
tools = [{"type": "function", "function": {"name": "weather", "parameters": weather}},
         {"type": "function", "function": {"name": "clock", "parameters": {
             "type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}},
             "required": ["tz"]}}}]
schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}

# a forced call among two tools, greedy and seeded-sampled
for name, extra in (("tool_choice_required_greedy", {"temperature": 0}),
                    ("tool_choice_required_seeded", {"seed": 11}),
                    ("tool_choice_named", {"seed": 3, "tool_choice": {
                        "type": "function", "function": {"name": "clock"}}})):
    body = dict({"messages": msgs, "tools": tools, "tool_choice": "required",
                 "max_tokens": 70}, **extra)
    want = post("/v1/chat/completions", body)
    got = m.create_chat_completion(**{k: v for k, v in body.items()})
    wc, gc = want["choices"][0], got["choices"][0]
    calls = gc["message"].get("tool_calls") or []
    args_ok = all(not validate(json.loads(c["function"]["arguments"]),
                               schemas[c["function"]["name"]]) for c in calls)
    check("python_%s_equals_server" % name,
          strip_ids(calls) == strip_ids(wc["message"].get("tool_calls")) and calls and
          gc["message"]["content"] == wc["message"]["content"] and
          gc["finish_reason"] == wc["finish_reason"] == "tool_calls" and
          usage(got) == usage(want) and shape(got) == shape(want),
          "python %r\nserver %r" % (got, want))
    check("python_%s_arguments_validate" % name, args_ok and
          (name != "tool_choice_named" or calls[0]["function"]["name"] == "clock"),
          repr(calls))

# streamed: the chunks put together give the same call as the server's stream
body = {"messages": msgs, "tools": tools, "tool_choice": "required", "max_tokens": 70,
        "temperature": 0, "stream": True}
want = post("/v1/chat/completions", body)
got = list(m.create_chat_completion(**body))


def joined(chunks):
    calls, content = {}, ""
    for c in chunks:
        d = c["choices"][0]["delta"]
        content += d.get("content") or ""
        for tc in d.get("tool_calls", []):
            one = calls.setdefault(tc["index"], {"name": "", "arguments": ""})
            f = tc.get("function", {})
            one["name"] += f.get("name") or ""
            one["arguments"] += f.get("arguments") or ""
    return content, calls, chunks[-1]["choices"][0]["finish_reason"]


check("python_stream_tool_call_equals_server", joined(got) == joined(want) and joined(got)[1] and
      got[0]["choices"][0]["delta"] == want[0]["choices"][0]["delta"] and
      all(c["object"] == "chat.completion.chunk" for c in got),
      "python %r\nserver %r" % (joined(got), joined(want)))

# response_format json_schema, sampled with the folder's defaults and a seed
person = {"type": "object", "properties": {
    "mood": {"enum": ["happy", "sad", "calm"]}, "tall": {"type": "boolean"},
    "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
    "required": ["mood", "tall", "tags"], "additionalProperties": False}
for seed in (1, 2):
    body = {"messages": [{"role": "user", "content": "Describe someone."}], "seed": seed,
            "max_tokens": 80, "response_format": {"type": "json_schema", "json_schema": {
                "name": "person", "schema": person}}}
    want = post("/v1/chat/completions", body)
    got = m.create_chat_completion(**body)
    text = got["choices"][0]["message"]["content"]
    try:
        errs = validate(json.loads(text), person)
    except ValueError as e:
        errs = [str(e)]
    check("python_json_schema_seed%d_equals_server" % seed,
          text == want["choices"][0]["message"]["content"] and shape(got) == shape(want),
          "python %r\nserver %r" % (text, want["choices"][0]["message"]["content"]))
    check("python_json_schema_seed%d_validates" % seed, not errs, "%r: %s" % (text, errs))

# logprobs, chat: the same tokens and numbers; probability rules hold
body = {"messages": msgs, "max_tokens": 12, "temperature": 0, "logprobs": True,
        "top_logprobs": 3, "chat_template_kwargs": {"enable_thinking": False}}
want = post("/v1/chat/completions", body)
kw = dict(body)
kw.pop("chat_template_kwargs")
got = m.create_chat_completion(enable_thinking=False, **kw)
gl, wl = got["choices"][0]["logprobs"]["content"], want["choices"][0]["logprobs"]["content"]
same = len(gl) == len(wl) == got["usage"]["completion_tokens"] and all(
    g["token"] == w["token"] and g["bytes"] == w["bytes"] and
    abs(g["logprob"] - w["logprob"]) < 1e-4 and
    [a["token"] for a in g["top_logprobs"]] == [a["token"] for a in w["top_logprobs"]]
    for g, w in zip(gl, wl))
check("python_chat_logprobs_equal_server", same and shape(got) == shape(want) and
      abs(sum(e["logprob"] for e in gl) - sum(e["logprob"] for e in wl)) < 1e-3,
      "python %r\nserver %r" % (gl[:2], wl[:2]))
rules = all(len(e["top_logprobs"]) == 3 and e["logprob"] <= 0 and
            # greedy: the chosen token is the most likely one
            e["top_logprobs"][0]["token"] == e["token"] and
            all(a["logprob"] >= b["logprob"] for a, b in
                zip(e["top_logprobs"], e["top_logprobs"][1:])) and
            sum(math.exp(a["logprob"]) for a in e["top_logprobs"]) <= 1 + 1e-6 and
            bytes(e["bytes"]).decode("utf-8", "replace") == e["token"] for e in gl)
check("python_chat_logprobs_follow_probability_rules", rules and
      "".join(e["token"] for e in gl) == got["choices"][0]["message"]["content"],
      repr(gl[:2]))

# logprobs, legacy completions: the parallel arrays, as the server's
body = {"prompt": "In the beginning", "max_tokens": 6, "temperature": 0, "logprobs": 2}
want = post("/v1/completions", body)
got = m.create_completion(**body)
g, w = got["choices"][0]["logprobs"], want["choices"][0]["logprobs"]
check("python_completion_logprobs_equal_server",
      g["tokens"] == w["tokens"] and g["text_offset"] == w["text_offset"] and
      [list(t) for t in g["top_logprobs"]] == [list(t) for t in w["top_logprobs"]] and
      all(abs(a - b) < 1e-4 for a, b in zip(g["token_logprobs"], w["token_logprobs"])) and
      got["choices"][0]["text"] == want["choices"][0]["text"] and shape(got) == shape(want),
      "python %r\nserver %r" % (g, w))

# bad fields: the server's own message
try:
    m.create_chat_completion(msgs, tools=[{"type": "function", "function": {"name": "a b"}}])
    check("python_bad_tool_says_the_servers_message", False, "no error")
except nectar.NectarError as e:
    want = post_err = None
    try:
        post("/v1/chat/completions", {"messages": msgs, "tools": [
            {"type": "function", "function": {"name": "a b"}}]})
    except urllib.error.HTTPError as he:
        post_err = json.loads(he.read())["error"]["message"]
    check("python_bad_tool_says_the_servers_message", str(e) == post_err,
          "%r vs %r" % (str(e), post_err))
m.close()
sys.exit(exit_code())
