#!/usr/bin/env python3
"""Drives a running `nectar serve --fake-engine -m tests/fixtures/serve/fake`
with the official `openai` Python client the way agent frameworks do:
structured output (response_format json_schema, also through the client's
pydantic `parse` helper) and tool calls (forced by name and `required`,
streamed and not, then a round trip with the tool's result in the history;
`none` and a LangChain-style default model name). The fake engine's text
is meaningless, so everything checked is what constrained sampling and the
API must guarantee: the output parses, and validates against the schema
(checked by a small validator written here, independent of the server's).
Prints PASS/FAIL lines for tests/serve/test_serve_agents.sh.

With --qwen35 it drives `nectar serve --fake-engine -m
tests/fixtures/serve/fake35 --chat-template qwen3.5` instead, whose engine
recites one Qwen3.5 tool call (XML, tools/make_serve_fixtures.py): the call
must come back as OpenAI tool_calls with arguments typed by the schema
(days an integer), streamed or not, with tool_choice auto, named and
required; the prompt token counts of tool definitions and tool history
must equal transformers' (fake35/expected.json); tool_choice none passes the
text on; arguments that are not a JSON object are a 400.

With --llama3 it drives `nectar serve --fake-engine -m
tests/fixtures/serve/fake_llama3 --chat-template llama3`, whose engine
recites one Llama 3 call, the whole reply {"name": ..., "parameters":
{...}}: it must come back as tool_calls (auto, streamed, named, required),
prompt token counts of tools and history must equal transformers', the
same reply without tools is text, and two calls in one history message
are a 400.

Usage: python tools/test_server_agents.py [--qwen35 | --llama3] http://127.0.0.1:PORT
"""
import json
import os
import sys
from typing import List, Literal

import openai
from serve_test_report import failures, report
import pydantic



def validate(v, s, defs):
    """The JSON Schema subset the tests use; True when v conforms."""
    if "$ref" in s:
        return validate(v, defs[s["$ref"].split("/")[-1]], defs)
    if "anyOf" in s:
        return any(validate(v, a, defs) for a in s["anyOf"])
    if "enum" in s:
        return v in s["enum"] and type(v) in {type(e) for e in s["enum"]}
    if "const" in s:
        return v == s["const"]
    t = s.get("type")
    if isinstance(t, list):
        return any(validate(v, dict(s, type=x), defs) for x in t)
    if t == "object":
        if not isinstance(v, dict):
            return False
        props = s.get("properties", {})
        if any(k not in v for k in s.get("required", [])):
            return False
        if s.get("additionalProperties") is False and any(k not in props for k in v):
            return False
        return all(validate(v[k], props[k], defs) for k in v if k in props)
    if t == "array":
        return (isinstance(v, list) and len(v) >= s.get("minItems", 0)
                and len(v) <= s.get("maxItems", len(v))
                and all(validate(x, s.get("items", {}), defs) for x in v))
    if t == "string":
        return (isinstance(v, str) and len(v) >= s.get("minLength", 0)
                and len(v) <= s.get("maxLength", len(v)))
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    return True


SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 12},
        "population": {"type": "integer"},
        "capital": {"type": "boolean"},
        "size": {"enum": ["small", "large"]},
        "rank": {"type": ["integer", "null"]},
        "zones": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        "where": {"$ref": "#/$defs/point"},
    },
    "required": ["city", "population", "capital", "size", "rank", "zones", "where"],
    "additionalProperties": False,
    "$defs": {"point": {"type": "object", "properties": {"lat": {"type": "number"},
                                                         "lon": {"type": "number"}},
                        "required": ["lat", "lon"], "additionalProperties": False}},
}

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "enum": ["Paris", "Oslo"]},
        "days": {"type": "integer"}}, "required": ["city", "days"],
        "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {
        "zone": {"type": "string", "maxLength": 6}}, "required": ["zone"]}}}


class Review(pydantic.BaseModel):
    stars: int
    verdict: Literal["good", "bad"]
    tags: List[pydantic.constr(max_length=5)] = pydantic.Field(max_length=2)
    helpful: bool


def stream_calls(stream):
    """A streamed reply's tool calls assembled from the deltas, its content
    and finish_reason."""
    acc, content, finish = {}, "", None
    for chunk in stream:
        if not chunk.choices:
            continue
        ch = chunk.choices[0]
        finish = ch.finish_reason or finish
        content += ch.delta.content or ""
        for tc in ch.delta.tool_calls or []:
            slot = acc.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            slot["id"] = tc.id or slot["id"]
            if tc.function and tc.function.name:
                slot["name"] += tc.function.name
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
    return acc, content, finish


def fake_fixture(folder):
    """A call-reciting fake engine's tests/fixtures/serve/FOLDER/expected.json
    (tools/make_serve_fixtures.py): the call it recites, the requests by
    name."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "tests", "fixtures", "serve", folder, "expected.json"),
              encoding="utf-8") as f:
        fx = json.load(f)
    return fx["call"], {r["name"]: r for r in fx["requests"]}


def message_calls(m):
    return [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in m.tool_calls or []]


def check_one_call(name, want, calls, finish, content):
    """The reply is the recited call alone, its arguments typed (days the
    integer 3, not "3")."""
    ok = (finish == "tool_calls" and len(calls) == 1 and calls[0]["id"]
          and calls[0]["name"] == want["name"] and not content)
    try:
        ok = ok and json.loads(calls[0]["arguments"]) == want["arguments"]
        ok = ok and type(json.loads(calls[0]["arguments"])["days"]) is int
    except (ValueError, IndexError, KeyError):
        ok = False
    report(name, ok, f"{finish}: {calls!r} content {content!r}")


def main35(base):
    want, reqs = fake_fixture("fake35")
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=60)
    model = "fake35"

    def one_call(name, calls, finish, content):
        check_one_call(name, want, calls, finish, content)

    def create(name, **kw):
        body = dict(reqs[name]["body"])
        extra = {"chat_template_kwargs": body.pop("chat_template_kwargs")}
        body.update(kw)
        return client.chat.completions.create(model=model, max_tokens=64, temperature=0,
                                              extra_body=extra, **body)

    r = create("auto_tools")
    m = r.choices[0].message
    calls = message_calls(m)
    one_call("qwen35_auto_tool_call", calls, r.choices[0].finish_reason, m.content)
    report("qwen35_tools_prompt_tokens_match_transformers",
           r.usage.prompt_tokens == reqs["auto_tools"]["prompt_tokens"],
           f"{r.usage.prompt_tokens} vs {reqs['auto_tools']['prompt_tokens']}")

    acc, content, finish = stream_calls(create("auto_tools", stream=True))
    one_call("qwen35_streamed_tool_call", list(acc.values()), finish, content)

    # Forced: the call's start is constrained, thinking is off; the rest is
    # the (greedy) model's.
    body = dict(reqs["auto_tools"]["body"])
    r = client.chat.completions.create(
        model=model, messages=body["messages"], tools=body["tools"], max_tokens=64, temperature=0,
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    m = r.choices[0].message
    calls = message_calls(m)
    one_call("qwen35_named_tool_call", calls, r.choices[0].finish_reason, m.content)
    acc, content, finish = stream_calls(client.chat.completions.create(
        model=model, messages=body["messages"], tools=body["tools"], max_tokens=64, temperature=0,
        tool_choice="required", stream=True))
    one_call("qwen35_streamed_required_tool_call", list(acc.values()), finish, content)

    for name in ("history", "history_preserve_thinking"):
        r = create(name)
        report(f"qwen35_{name}_prompt_tokens_match_transformers",
               r.usage.prompt_tokens == reqs[name]["prompt_tokens"],
               f"{r.usage.prompt_tokens} vs {reqs[name]['prompt_tokens']}")

    r = create("tool_choice_none", tools=[reqs["auto_tools"]["body"]["tools"][0]],
               tool_choice="none")
    m = r.choices[0].message
    report("qwen35_tool_choice_none_passes_text",
           not m.tool_calls and (m.content or "").startswith("<tool_call>")
           and r.usage.prompt_tokens == reqs["tool_choice_none"]["prompt_tokens"], repr(r))

    bad = json.loads(json.dumps(reqs["history"]["body"]["messages"]))
    bad[2]["tool_calls"][0]["function"]["arguments"] = "[1, 2]"
    try:
        client.chat.completions.create(model=model, messages=bad, max_tokens=4)
        report("qwen35_non_object_arguments_are_a_400", False, "accepted")
    except openai.BadRequestError as e:
        report("qwen35_non_object_arguments_are_a_400", "JSON object" in str(e), str(e))

    print(f"{failures()} failures")
    return 1 if failures() else 0


def main_llama3(base):
    """Llama 3's tagless calls: the reply is the call (a fake engine reciting
    one, --chat-template llama3)."""
    want, reqs = fake_fixture("fake_llama3")
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=60)

    def create(name, **kw):
        return client.chat.completions.create(model="fake_llama3", max_tokens=64, temperature=0,
                                              **dict(reqs[name]["body"], **kw))

    r = create("auto_tools")
    check_one_call("llama3_auto_tool_call", want, message_calls(r.choices[0].message),
                   r.choices[0].finish_reason, r.choices[0].message.content)
    for name in ("auto_tools", "history", "tool_choice_none"):
        r = create(name)
        report(f"llama3_{name}_prompt_tokens_match_transformers",
               r.usage.prompt_tokens == reqs[name]["prompt_tokens"],
               f"{r.usage.prompt_tokens} vs {reqs[name]['prompt_tokens']}")
    acc, content, finish = stream_calls(create("auto_tools", stream=True))
    check_one_call("llama3_streamed_tool_call", want, list(acc.values()), finish, content)
    # forced: the whole call by constrained sampling, which the recital fits
    r = create("auto_tools", tool_choice={"type": "function", "function": {"name": "get_weather"}})
    check_one_call("llama3_named_tool_call", want, message_calls(r.choices[0].message),
                   r.choices[0].finish_reason, r.choices[0].message.content)
    acc, content, finish = stream_calls(create("auto_tools", tool_choice="required", stream=True))
    check_one_call("llama3_streamed_required_tool_call", want, list(acc.values()), finish, content)
    # no tools: the same reply is text
    m = create("tool_choice_none").choices[0].message
    report("llama3_without_tools_the_reply_is_text",
           not m.tool_calls and (m.content or "").startswith('{"name": "get_weather"'), repr(m))
    bad = json.loads(json.dumps(reqs["history"]["body"]["messages"]))
    bad[2]["tool_calls"] = bad[2]["tool_calls"] * 2
    try:
        client.chat.completions.create(model="fake_llama3", messages=bad, max_tokens=4)
        report("llama3_two_calls_in_a_message_are_a_400", False, "accepted")
    except openai.BadRequestError as e:
        report("llama3_two_calls_in_a_message_are_a_400", "one call per message" in str(e), str(e))

    print(f"{failures()} failures")
    return 1 if failures() else 0


def main():
    if sys.argv[1] == "--qwen35":
        return main35(sys.argv[2])
    if sys.argv[1] == "--llama3":
        return main_llama3(sys.argv[2])
    base = sys.argv[1]
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=60)
    model = "gpt-4o-mini"  # a client library's default name: accepted (docs/server.md)
    user = [{"role": "user", "content": "Describe a city as JSON."}]

    # -- structured output -----------------------------------------------------
    for i in range(3):
        r = client.chat.completions.create(
            model=model, messages=user, max_tokens=400, temperature=1.0, seed=i,
            response_format={"type": "json_schema",
                             "json_schema": {"name": "city", "strict": True, "schema": SCHEMA}})
        text, fin = r.choices[0].message.content, r.choices[0].finish_reason
        try:
            value = json.loads(text)
            ok = fin == "stop" and validate(value, SCHEMA, SCHEMA["$defs"])
        except ValueError:
            ok = False
        report(f"json_schema_output_validates_seed{i}", ok, f"{fin}: {text!r}")

    try:
        r = client.beta.chat.completions.parse(model=model, messages=user, max_tokens=300,
                                               response_format=Review)
        parsed = r.choices[0].message.parsed
        ok = isinstance(parsed, Review) and all(len(t) <= 5 for t in parsed.tags)
        report("pydantic_parse_helper", ok, repr(r.choices[0].message.content))
    except Exception as e:  # noqa: BLE001 (any failure is the test's failure)
        report("pydantic_parse_helper", False, repr(e))

    try:
        client.chat.completions.create(
            model=model, messages=user,
            response_format={"type": "json_schema", "json_schema": {
                "name": "x", "schema": {"type": "string", "pattern": "^a+$"}}})
        report("unenforceable_schema_is_a_400", False, "accepted")
    except openai.BadRequestError as e:
        report("unenforceable_schema_is_a_400", "pattern" in str(e), str(e))

    # Schemas that once gave 200 with output that did not validate, or none.
    broken = {"ref_cycle_is_a_400": ({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}},
                                     "$ref cycle"),
              "enum_of_another_type_is_a_400": ({"type": "integer", "enum": ["a"]}, "enum[0]")}
    for name, (schema, says) in broken.items():
        try:
            client.chat.completions.create(
                model=model, messages=user, max_tokens=20,
                response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
            report(name, False, "accepted")
        except openai.BadRequestError as e:
            report(name, says in str(e), str(e))
    outside = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 8}},
               "required": ["b"]}
    for i in range(3):
        r = client.chat.completions.create(
            model=model, messages=user, max_tokens=200, temperature=1.0, seed=i,
            response_format={"type": "json_schema", "json_schema": {"name": "o", "schema": outside}})
        text, fin = r.choices[0].message.content, r.choices[0].finish_reason
        try:
            ok = fin == "stop" and validate(json.loads(text), outside, {})
        except ValueError:
            ok = False
        report(f"required_outside_properties_is_generated_seed{i}", ok, f"{fin}: {text!r}")

    # -- tool calls --------------------------------------------------------------
    ask = [{"role": "user", "content": "Weather in Paris for 2 days?"}]
    r = client.chat.completions.create(
        model=model, messages=ask, max_tokens=200, tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    m = r.choices[0].message
    calls = m.tool_calls or []
    args = json.loads(calls[0].function.arguments) if calls else None
    ok = (r.choices[0].finish_reason == "tool_calls" and len(calls) == 1
          and calls[0].function.name == "get_weather" and calls[0].id
          and validate(args, WEATHER["function"]["parameters"], {}))
    report("named_tool_call", ok, repr(m))

    # The round trip: the call and its result in the history.
    history = ask + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": calls[0].id if calls else "call_1", "type": "function",
             "function": {"name": "get_weather",
                          "arguments": calls[0].function.arguments if calls else "{}"}}]},
        {"role": "tool", "tool_call_id": calls[0].id if calls else "call_1",
         "content": json.dumps({"sky": "clear", "temp_c": 21})}]
    r = client.chat.completions.create(model=model, messages=history, max_tokens=12,
                                       tools=[WEATHER, TIME])
    report("tool_result_round_trip", r.choices[0].finish_reason in ("stop", "length", "tool_calls")
           and r.usage.prompt_tokens > 0, repr(r))

    # Streamed, tool_choice "required": deltas assemble into valid calls.
    # (With several tools "required" fixes the name only, its arguments
    # are any object, which the fake engine may not close in time; so one.)
    stream = client.chat.completions.create(
        model=model, messages=ask, max_tokens=200, tools=[WEATHER], tool_choice="required",
        stream=True)
    acc, _, finish = stream_calls(stream)
    ok = finish == "tool_calls" and len(acc) == 1
    for slot in acc.values():
        try:
            json.loads(slot["arguments"])
        except ValueError:
            ok = False
        ok = ok and slot["id"] and slot["name"] == "get_weather"
    report("streamed_required_tool_call", ok, repr(acc))

    r = client.chat.completions.create(model=model, messages=ask, max_tokens=8,
                                       tools=[WEATHER], tool_choice="none")
    report("tool_choice_none_calls_nothing", not r.choices[0].message.tool_calls, repr(r))

    print(f"{failures()} failures")
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
