#!/usr/bin/env python3
"""Drives a running `nectar serve -m models/demo -m tests/fixtures/st/st_max
-m tests/fixtures/st/st_mean -m tests/fixtures/st/rerank` with the official
`openai` client: embeddings.create (a string, a list, token ids, float and
base64, usage) against SentenceTransformer(dir).encode's vectors in the
fixtures' ref.json (tools/make_st_fixtures.py); the request's model picks
the encoder; /v1/models lists all four; /v1/rerank (llama-server's shape)
against HF's cross-encoder logits; chat still answers beside the encoders.
With --encoders-only (a server of st_max alone) chat is a 404. With
--generators TINY_TXT (a server of models/demo, tests/fixtures/qwen3/tiny_gqa2
and st_max) the request's model picks the generator: demo's greedy text is
HF's (models/demo/reference.json), tiny_gqa2's is `nectar run`'s (TINY_TXT).
Prints PASS/FAIL lines for tests/serve/test_serve_embeddings.sh.

Usage: python tools/test_server_embeddings.py URL IDS_JSON [--encoders-only]
  IDS_JSON: {"text": [ids without special tokens], ...} from `nectar tokenize`
"""
import json
import os
import sys
import urllib.error
import urllib.request

import openai
from serve_test_report import failures, report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ST = os.path.join(ROOT, "tests", "fixtures", "st")


def ref(name):
    with open(os.path.join(ST, name, "ref.json")) as f:
        return json.load(f)


def close(got, want, tol=1e-4):
    if len(got) != len(want):
        return False, f"length {len(got)} vs {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if abs(g - w) > tol + tol * abs(w):
            return False, f"[{i}] {g} vs {w}"
    return True, ""


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def generators(url, tiny_txt):
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    with open(os.path.join(ROOT, "models", "demo", "reference.json")) as f:
        demo = json.load(f)["prompts"][0]
    with open(tiny_txt) as f:
        tiny = f.read()
    r = client.completions.create(model="demo", prompt=demo["text"], max_tokens=16, temperature=0)
    report("generators_demo_by_name", r.model == "demo" and r.choices[0].text and
           demo["greedy_text"].startswith(r.choices[0].text), repr(r.choices[0].text))
    r = client.completions.create(model="tiny_gqa2", prompt="In", max_tokens=16, temperature=0)
    report("generators_tiny_by_name", r.model == "tiny_gqa2" and r.choices[0].text == tiny,
           "%r vs nectar run %r" % (r.choices[0].text, tiny))
    r = client.completions.create(model="gpt-3.5-turbo-instruct", prompt=demo["text"],
                                  max_tokens=4, temperature=0)
    report("generators_openai_name_takes_the_first", r.model == "demo", r.model)
    names = sorted(m.id for m in client.models.list().data)
    report("generators_all_listed", names == ["demo", "st_max", "tiny_gqa2"], str(names))
    try:
        client.completions.create(model="nope", prompt="x", max_tokens=2)
        report("generators_unknown_404", False, "no error")
    except openai.NotFoundError as e:
        report("generators_unknown_404", "'demo', 'tiny_gqa2'" in str(e), str(e))
    r = client.embeddings.create(model="st_max", input="hello")
    report("generators_and_encoder", len(r.data[0].embedding) == 32)
    sys.exit(1 if failures() else 0)


def main():
    url, ids_path = sys.argv[1], sys.argv[2]
    if ids_path == "--generators":
        generators(url, sys.argv[3])
    only = "--encoders-only" in sys.argv
    with open(ids_path) as f:
        ids = json.load(f)
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    rmax, rmean = ref("st_max"), ref("st_mean")
    texts = rmax["texts"]

    # the client's default (base64, decoded by the client) and float
    for fmt in ("base64", "float"):
        kw = {} if fmt == "base64" else {"encoding_format": "float"}
        r = client.embeddings.create(model="st_max", input=texts, **kw)
        ok, why = True, ""
        for i, d in enumerate(r.data):
            good, w = close(d.embedding, rmax["embeddings"][i])
            if not good or d.index != i:
                ok, why = False, f"input {i}: {w}"
                break
        report(f"embeddings_{fmt}_equal_sentence_transformers", ok and len(r.data) == len(texts), why)
        if fmt == "float":
            want_tokens = sum(len(ids[t]) + 2 for t in texts)
            report("embeddings_usage_counts_tokens",
                   r.usage.prompt_tokens == want_tokens and r.usage.total_tokens == want_tokens
                   and r.model == "st_max",
                   f"{r.usage} vs {want_tokens}, model {r.model}")

    r = client.embeddings.create(model="st_max", input=texts[0])
    report("embeddings_single_string", close(r.data[0].embedding, rmax["embeddings"][0])[0])

    r = client.embeddings.create(model="st_max", input=[ids[t] for t in texts[:2]])
    ok = all(close(r.data[i].embedding, rmax["embeddings"][i])[0] for i in range(2))
    r1 = client.embeddings.create(model="st_max", input=ids[texts[1]])
    report("embeddings_token_ids_equal_their_text",
           ok and close(r1.data[0].embedding, rmax["embeddings"][1])[0])

    names = sorted(m.id for m in client.models.list().data)
    want = ["st_max"] if only else ["demo", "rerank", "st_max", "st_mean"]
    report("models_lists_every_model", names == want, str(names))

    if only:
        try:
            client.chat.completions.create(model="st_max", max_tokens=2,
                                           messages=[{"role": "user", "content": "hi"}])
            report("chat_on_encoders_only_404", False, "no error")
        except openai.NotFoundError as e:
            report("chat_on_encoders_only_404", "encoders only" in str(e), str(e))
        status, body = post(url + "/v1/rerank", {"query": "q", "documents": ["d"]})
        report("rerank_without_reranker_404", status == 404, str(body))
        sys.exit(1 if failures() else 0)

    # the model field picks the encoder: st_mean has its own weights, pooling and default prompt
    r = client.embeddings.create(model="st_mean", input=rmean["texts"])
    ok = all(close(d.embedding, rmean["embeddings"][i])[0] for i, d in enumerate(r.data))
    report("embeddings_model_picks_the_encoder", ok and r.model == "st_mean")

    # a client library's default name: the first encoder
    r = client.embeddings.create(model="text-embedding-3-small", input=texts[0])
    report("embeddings_openai_name_takes_the_first",
           r.model == "st_max" and close(r.data[0].embedding, rmax["embeddings"][0])[0])

    try:
        client.embeddings.create(model="no-such-model", input="x")
        report("embeddings_unknown_model_404", False, "no error")
    except openai.NotFoundError as e:
        report("embeddings_unknown_model_404", "no-such-model" in str(e), str(e))
    try:
        client.embeddings.create(model="st_max", input="x", dimensions=7)
        report("embeddings_bad_dimensions_400", False, "no error")
    except openai.BadRequestError as e:
        report("embeddings_bad_dimensions_400", "dimensions" in str(e), str(e))
    try:
        client.embeddings.create(model="st_max", input=[])
        report("embeddings_empty_input_400", False, "no error")
    except openai.BadRequestError as e:
        report("embeddings_empty_input_400", "input" in str(e), str(e))


    rr = ref("rerank")
    status, body = post(url + "/v1/rerank", {"model": "rerank", "query": rr["query"],
                                             "documents": rr["documents"], "top_n": 3,
                                             "return_documents": True})
    order = sorted(range(len(rr["logits"])), key=lambda i: -rr["logits"][i])[:3]
    ok = status == 200 and [x["index"] for x in body["results"]] == order
    ok = ok and all(abs(x["relevance_score"] - rr["logits"][x["index"]]) < 1e-4
                    and x["document"]["text"] == rr["documents"][x["index"]]
                    for x in body["results"])
    report("rerank_equals_hf_cross_encoder", ok and body["usage"]["prompt_tokens"] > 0, str(body))
    status, body = post(url + "/v1/rerank", {"model": "st_max", "query": "q", "documents": ["d"]})
    report("rerank_needs_a_reranker", status == 400 and "not a reranker" in body["error"]["message"],
           str(body))

    c = client.chat.completions.create(model="demo", max_tokens=4, temperature=0,
                                       messages=[{"role": "user", "content": "In the beginning"}])
    report("chat_beside_encoders", c.model == "demo" and c.usage.completion_tokens > 0, str(c))
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
