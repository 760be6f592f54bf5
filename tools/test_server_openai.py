#!/usr/bin/env python3
"""Drives a running `nectar serve --fake-engine -m tests/fixtures/serve/fake`
with the official `openai` Python client and checks its answers against
tests/fixtures/serve/expected.json (made by tools/make_serve_fixtures.py).
Prints PASS/FAIL lines for tests/serve/test_serve_openai.sh.

Usage: python tools/test_server_openai.py http://127.0.0.1:PORT [API_KEY]
"""
import json
import os
import sys

import openai
from serve_test_report import failures, report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTED = os.path.join(ROOT, "tests", "fixtures", "serve", "expected.json")



def case(cases, name):
    return next(c for c in cases if c["name"] == name)


def extra_of(body, known):
    return {k: v for k, v in body.items() if k not in known}


def chat_kwargs(body):
    kw = {k: body[k] for k in ("messages", "temperature", "max_tokens", "stop", "logprobs",
                              "top_logprobs") if k in body}
    extra = extra_of(body, set(kw) | {"model"})
    return kw, extra


def check_logprobs(got, want):
    if want is None:
        return True
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g["token"] != w["token"] or abs(g["logprob"] - w["logprob"]) > 1e-4:
            return False
    return True


def main():
    base, key = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "none")
    cases = json.load(open(EXPECTED, encoding="utf-8"))["cases"]
    client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=30)

    models = client.models.list()
    report("openai_models_list", [m.id for m in models.data] == ["fake"], str(models))

    for name in ("chat_thinking", "chat_no_thinking", "chat_stop", "chat_logprobs"):
        c = case(cases, name)
        e = c["expect"]
        kw, extra = chat_kwargs(c["body"])
        r = client.chat.completions.create(model="fake", extra_body=extra, **kw)
        msg = r.choices[0].message
        reasoning = getattr(msg, "reasoning_content", None)
        if reasoning is None and msg.model_extra:
            reasoning = msg.model_extra.get("reasoning_content")
        lp = None
        if r.choices[0].logprobs and r.choices[0].logprobs.content is not None:
            lp = [{"token": t.token, "logprob": t.logprob} for t in r.choices[0].logprobs.content]
        ok = (msg.content == e["content"] and (reasoning or None) == e["reasoning_content"]
              and r.choices[0].finish_reason == e["finish_reason"]
              and r.usage.prompt_tokens == e["prompt_tokens"]
              and r.usage.completion_tokens == e["completion_tokens"]
              and (e["logprobs"] is None or check_logprobs(lp or [], e["logprobs"])))
        report(f"openai_chat_{name}", ok, f"{r}")

        # The same request streamed, with usage in a last chunk.
        stream = client.chat.completions.create(model="fake", extra_body=extra, stream=True,
                                                stream_options={"include_usage": True}, **kw)
        content, reasoning, finish, usage = "", "", None, None
        for ch in stream:
            if ch.usage:
                usage = ch.usage
            if not ch.choices:
                continue
            d = ch.choices[0].delta
            content += d.content or ""
            extra_d = d.model_extra or {}
            reasoning += extra_d.get("reasoning_content") or ""
            finish = ch.choices[0].finish_reason or finish
        ok = (content == e["content"] and (reasoning or None) == e["reasoning_content"]
              and finish == e["finish_reason"] and usage is not None
              and usage.completion_tokens == e["completion_tokens"])
        report(f"openai_chat_stream_{name}", ok,
               f"content={content!r} reasoning={reasoning!r} finish={finish} usage={usage}")

    for name in ("completion", "completion_length", "completion_stop_span", "completion_token_ids",
                 "completion_logprobs"):
        c = case(cases, name)
        e = c["expect"]
        b = dict(c["body"])
        r = client.completions.create(model="fake", **b)
        lp = None
        if r.choices[0].logprobs is not None:
            lpo = r.choices[0].logprobs
            lp = [{"token": t, "logprob": v} for t, v in zip(lpo.tokens, lpo.token_logprobs)]
        ok = (r.choices[0].text == e["content"] and r.choices[0].finish_reason == e["finish_reason"]
              and r.usage.completion_tokens == e["completion_tokens"]
              and (e["logprobs"] is None or check_logprobs(lp or [], e["logprobs"])))
        report(f"openai_completion_{name}", ok, f"{r}")
        text = "".join(ch.choices[0].text for ch in
                       client.completions.create(model="fake", stream=True, **b) if ch.choices)
        report(f"openai_completion_stream_{name}", text == e["content"], repr(text))

    try:
        client.chat.completions.create(model="fake", messages=[], temperature=0)
        report("openai_bad_request_raises", False, "no error for empty messages")
    except openai.BadRequestError as err:
        report("openai_bad_request_raises", err.status_code == 400, str(err))
    try:
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
        report("openai_unknown_model_raises", False, "no error for an unknown model")
    except openai.NotFoundError as err:
        report("openai_unknown_model_raises", err.status_code == 404, str(err))
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
