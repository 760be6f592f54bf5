"""The nectar Python package (python/), as installed by test_python.sh, against
independent references: `nectar run --temp 0` and `nectar embed` (the C
command line), HF transformers' tokenizer ids and chat template renderings,
fill-mask and classifier probabilities (tests/fixtures, written by tools/);
encode against SentenceTransformer(dir).encode on the sentence-transformers
folders of tests/fixtures/st (tools/make_st_fixtures.py); the OpenAI-shaped
calls (create_completion, create_chat_completion, create_embedding) against
the same references; sampling defaults equal to `nectar run --seed` without
--temp (both from generation_config.json).

usage: test_python.py DEMO_DIR RUN_OUT PROMPT N ENCODER_DIR EMBED_JSON FIXTURES SAMPLED_OUT
"""

import json
import os
import sys

import nectar
from checks import check, exit_code

demo, run_out, prompt, n, enc_dir, embed_json, fix, sampled_out = sys.argv[1:9]
n = int(n)


def close(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


# the package loaded the copy pip put inside it, not one from the build tree
pkg = os.path.dirname(nectar.__file__)
check("package_uses_its_own_library", nectar._lib.LIB._name.startswith(pkg), nectar._lib.LIB._name)
check("version_is_the_libraries", nectar.__version__.count(".") == 2, nectar.__version__)

m = nectar.Model(demo, threads=1)
check("model_is_a_decoder", m.kind == "decoder", m.kind)
with open(run_out, "rb") as f:
    want = f.read()
got = m.generate(prompt, n, temperature=0)
check("generate_greedy_equals_nectar_run", got.encode() == want, "%r vs %r" % (got, want))
check("generate_reports_finish", m.last_finish in ("eos", "length"), m.last_finish)

pieces = list(nectar.Model(demo, threads=1).stream(prompt, n, temperature=0))
check("stream_pieces_concatenate_to_nectar_run", "".join(pieces).encode() == want and
      len(pieces) > 1, "%d pieces %r" % (len(pieces), "".join(pieces)))

# leaving the loop early cancels the generation
early = []
for piece in m.stream(prompt, n, temperature=0):
    early.append(piece)
    if len(early) == 2:
        break
check("stream_break_cancels", m.last_finish == "cancel" and "".join(early) == "".join(pieces[:2]),
      "%s %r" % (m.last_finish, early))

# same seed, same text; a stop string cuts before it
a = m.generate(prompt, n, temperature=1.2, top_k=0, top_p=1, seed=2**63 + 5)
b = m.generate(prompt, n, temperature=1.2, top_k=0, top_p=1, seed=2**63 + 5)
c = m.generate(prompt, n, temperature=1.2, top_k=0, top_p=1, seed=2**63 + 6)
check("seeded_sampling_repeats", a == b and a != c and len(a) > 0, "%r %r %r" % (a, b, c))
word = want.decode().split()[2]
cut = m.generate(prompt, n, temperature=0, stop=" " + word)
check("stop_string_cuts", cut == want.decode()[:want.decode().index(" " + word)] and
      m.last_finish == "stop", "%r (%s)" % (cut, m.last_finish))

# tokenizer against HF's ids (models/demo/reference.json)
with open(os.path.join(demo, "reference.json")) as f:
    ref = json.load(f)["prompts"][0]
ids = m.tokenize(ref["text"])
check("tokenize_matches_hf", ids == ref["ids"], "%r vs %r" % (ids, ref["ids"]))
check("detokenize_round_trips", m.detokenize(ids) == ref["text"], m.detokenize(ids))
check("token_id", m.token_id("<|im_end|>") is not None and m.token_id("no such token") is None)

# the chat template against transformers' apply_chat_template
n_cases = bad = 0
with open(os.path.join(fix, "chat", "cases.jsonl")) as f:
    for line in f:
        c = json.loads(line)
        keys = {k for msg in c["messages"] for k in msg}
        if not keys <= {"role", "content", "reasoning_content"} or set(c) - {
                "name", "messages", "add_generation_prompt", "enable_thinking", "expected"}:
            continue  # tools and tool calls are not in the package's API
        n_cases += 1
        out = m.apply_chat_template(c["messages"], c["add_generation_prompt"],
                                    c["enable_thinking"])
        if out != c["expected"]:
            bad += 1
            print("  %s: %r" % (c["name"], out))
check("chat_template_matches_hf", n_cases >= 3 and bad == 0, "%d of %d differ" % (bad, n_cases))
# a Llama model renders its own family's template (0.2.0)
llama = nectar.Model(os.path.join(fix, "llama", "tiny_llama3"), threads=1)
with open(os.path.join(fix, "chat", "llama3_cases.jsonl")) as f:
    rows = [json.loads(line) for line in f]
bad = [c["name"] for c in rows if llama.apply_chat_template(
    c["messages"], c["add_generation_prompt"]) != c["expected"]]
check("llama_chat_template_matches_hf", len(rows) >= 10 and not bad, "%r differ" % bad)
llama.close()

# reasoning_content is split off by the library, by token id, as the server
# splits it (nc_sequence_split_reasoning). Qwen3.5's generation prompt
# opens <think>, so the reply is reasoning up to </think>; the reference is
# the same greedy text unsplit (generate), split here by the rule: the
# blanks around the reasoning and after </think> go.
q35 = nectar.Model(os.path.join(fix, "qwen35", "tiny_text_untied"), threads=1)
hello = [{"role": "user", "content": "Hello"}]
raw = q35.generate(q35.apply_chat_template(hello, True, True), 12, temperature=0)
head, tag, tail = raw.partition("</think>")
want_r, want_c = head.strip(" \n\r\t"), tail.lstrip(" \n\r\t") if tag else ""
msg = q35.create_chat_completion(hello, max_tokens=12, temperature=0)["choices"][0]["message"]
check("chat_completion_reasoning_split_by_token",
      want_r and msg.get("reasoning_content") == want_r and msg["content"] == want_c,
      "%r / %r vs %r" % (msg.get("reasoning_content"), msg["content"], raw))
deltas = [x["choices"][0]["delta"] for x in
          q35.create_chat_completion(hello, max_tokens=12, temperature=0, stream=True)]
check("chat_completion_stream_reasoning_split_by_token",
      "".join(d.get("reasoning_content", "") for d in deltas) == want_r and
      "".join(d.get("content", "") for d in deltas) == want_c and
      sum("reasoning_content" in d for d in deltas) > 1, repr(deltas[:4]))
q35.close()
reply = m.chat([{"role": "user", "content": "Hello"}], 8, temperature=0)
want_reply = m.generate(m.apply_chat_template([{"role": "user", "content": "Hello"}]), 8,
                        temperature=0)
check("chat_is_template_then_generate", reply == want_reply, "%r vs %r" % (reply, want_reply))

# encoders: embed equals `nectar embed`; fill-mask and classify equal HF's
e = nectar.Model(enc_dir, threads=1)
with open(embed_json) as f:
    want_vec = json.load(f)["embeddings"][0]
vec = [float(x) for x in e.embed("Hello")]
check("embed_equals_nectar_embed", close(vec, want_vec, 1e-5), "%r vs %r" % (vec[:3], want_vec[:3]))

# the bf16 contract is the process's: a bad one is refused naming it; under
# "fast" this fp32-weight encoder is unchanged (only bf16 weights' products
# round their activations)
try:
    nectar.set_bf16_contract("half")
    check("bf16_contract_refuses_a_bad_name", False, "no error")
except nectar.NectarError as ex:
    check("bf16_contract_refuses_a_bad_name", ex.status == "invalid" and "'half'" in str(ex),
          str(ex))
nectar.set_bf16_contract("fast")
vec_fast = [float(x) for x in nectar.Model(enc_dir, threads=1).embed("Hello")]
nectar.set_bf16_contract("accurate")
check("bf16_contract_fast_leaves_fp32_weights", close(vec_fast, want_vec, 1e-5),
      "%r vs %r" % (vec_fast[:3], want_vec[:3]))

mlm = os.path.join(fix, "modernbert", "mb_mlm")
with open(os.path.join(mlm, "ref", "fill_mask.json")) as f:
    fm = json.load(f)
top = nectar.Model(mlm, threads=1).fill_mask(fm["text"], k=len(fm["ids"]))
check("fill_mask_matches_hf", len(top) == 1 and [t["token"] for t in top[0]] == fm["ids"] and
      close([t["score"] for t in top[0]], fm["probs"], 1e-4), repr(top))

cls = os.path.join(fix, "modernbert", "mm_cls")
with open(os.path.join(cls, "ref", "classify.json")) as f:
    cr = json.load(f)
probs = nectar.Model(cls, threads=1).classify(cr["texts"][0])
check("classify_matches_hf", close(list(probs.values()), cr["probs"][0], 1e-4), repr(probs))

# errors: NectarError with the library's message naming the path or value
bad_path = os.path.join(os.path.dirname(run_out), "no-such-model")
try:
    nectar.Model(bad_path)
    check("bad_path_raises_nectar_error", False, "no exception")
except nectar.NectarError as x:
    check("bad_path_raises_nectar_error", bad_path in str(x) and x.status == "not-found",
          "%s (%s)" % (x, x.status))
try:
    m.generate(prompt, 4, temperature=-1)
    check("bad_sampling_raises_nectar_error", False, "no exception")
except nectar.NectarError as x:
    check("bad_sampling_raises_nectar_error", "temperature" in str(x), str(x))
try:
    e.generate("x", 4)
    check("encoder_generate_raises", False, "no exception")
except nectar.NectarError as x:
    check("encoder_generate_raises", "encoder" in str(x), str(x))

# sentence-transformers folders: encode equals SentenceTransformer.encode
for name in ("st_cls", "st_mean", "st_max", "st_last", "st_wmean"):
    d = os.path.join(fix, "st", name)
    with open(os.path.join(d, "ref.json")) as f:
        st_ref = json.load(f)
    st = nectar.Model(d, threads=1)
    rows = st.encode(st_ref["texts"], batch_size=2)
    ok = len(rows) == len(st_ref["texts"]) and all(
        close([float(x) for x in r], w, 1e-4) for r, w in zip(rows, st_ref["embeddings"]))
    check("encode_equals_sentence_transformers_" + name, ok, name)
    st.close()
st = nectar.Model(os.path.join(fix, "st", "st_wmean"), threads=1)
one = [float(x) for x in st.encode(st_ref["texts"][0], normalize_embeddings=True)]
norm = sum(x * x for x in one) ** 0.5
want = st_ref["embeddings"][0]
wn = sum(x * x for x in want) ** 0.5
check("encode_one_text_normalized", abs(norm - 1) < 1e-5 and close(one, [x / wn for x in want], 1e-4),
      "norm %g" % norm)
emb = st.create_embedding(st_ref["texts"][:2])
check("create_embedding_is_openai_shaped",
      emb["object"] == "list" and [x["index"] for x in emb["data"]] == [0, 1] and
      emb["data"][0]["object"] == "embedding" and emb["model"] == "st_wmean" and
      close(emb["data"][1]["embedding"], st_ref["embeddings"][1], 1e-4) and
      emb["usage"]["prompt_tokens"] > 2, repr(emb)[:300])
st.close()

# OpenAI-shaped generation: the same text as generate / nectar run
with open(run_out, "rb") as f:
    want_run = f.read().decode()
c = m.create_completion(prompt, n, temperature=0)
check("create_completion_equals_nectar_run",
      c["object"] == "text_completion" and c["choices"][0]["text"] == want_run and
      c["choices"][0]["finish_reason"] == "length" and c["usage"]["completion_tokens"] == n and
      c["usage"]["prompt_tokens"] == len(m.tokenize(prompt)) and c["id"].startswith("cmpl-"),
      repr(c)[:300])
chunks = list(m.create_completion(prompt, n, temperature=0, stream=True))
check("create_completion_stream_joins_to_the_text",
      "".join(x["choices"][0]["text"] for x in chunks) == want_run and
      chunks[-1]["choices"][0]["finish_reason"] == "length", repr(chunks[-2:]))
msgs = [{"role": "user", "content": "Hello"}]
cc = m.create_chat_completion(msgs, max_tokens=8, temperature=0, enable_thinking=False)
want_chat = m.chat(msgs, 8, enable_thinking=False, temperature=0)
msg = cc["choices"][0]["message"]
check("create_chat_completion_equals_chat",
      cc["object"] == "chat.completion" and msg["role"] == "assistant" and
      (msg.get("reasoning_content") is None and msg["content"] == want_chat) and
      cc["usage"]["completion_tokens"] == 8, repr(cc)[:300])
chunks = list(m.create_chat_completion(msgs, max_tokens=8, temperature=0, enable_thinking=False,
                                       stream=True))
check("create_chat_completion_stream",
      chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""} and
      "".join(x["choices"][0]["delta"].get("content", "") for x in chunks) == want_chat and
      chunks[-1]["choices"][0]["finish_reason"] == "length" and
      all(x["object"] == "chat.completion.chunk" for x in chunks), repr(chunks[:2]))

# sampling defaults: the folder's generation_config.json, as `nectar run`
with open(sampled_out, "rb") as f:
    want_sampled = f.read().decode()
got = m.generate(prompt, n, seed=7)
check("sampling_defaults_from_generation_config", got == want_sampled,
      "%r vs nectar run --seed 7: %r" % (got, want_sampled))

for bad_stop in ("", [""], ["ok", ""]):
    try:
        m.generate(prompt, 4, stop=bad_stop)
        check("empty_stop_rejected", False, "stop=%r accepted" % (bad_stop,))
        break
    except ValueError as x:
        if bad_stop == ["ok", ""]:
            check("empty_stop_rejected", "empty" in str(x), str(x))
# tools with tool_choice "none": shown to nobody, parsed from nothing, the
# plain reply (test_python_serve.py compares tools with the server)
none = m.create_chat_completion(msgs, max_tokens=8, temperature=0, enable_thinking=False,
                                tools=[{"type": "function", "function": {"name": "f"}}],
                                tool_choice="none")
check("tool_choice_none_is_the_plain_reply",
      none["choices"][0]["message"]["content"] == want_chat and
      "tool_calls" not in none["choices"][0]["message"], repr(none)[:300])
# Model("ORG/NAME"): the Hugging Face cache as huggingface_hub laid it out
# (tests/fixtures/hf_cache/layout.json, tools/make_hf_cache_fixture.py),
# rebuilt here; the C API's nc_model_open resolves the name
import shutil  # noqa: E402
import tempfile  # noqa: E402
root = os.path.dirname(os.path.dirname(fix))
with open(os.path.join(fix, "hf_cache", "layout.json")) as f:
    layout = json.load(f)
hub = tempfile.mkdtemp()
try:
    for d in layout["dirs"]:
        os.makedirs(os.path.join(hub, d))
    for f in layout["files"]:
        if f["source"]:
            shutil.copy(os.path.join(root, f["source"]), os.path.join(hub, f["path"]))
        else:
            with open(os.path.join(hub, f["path"]), "w") as out:
                out.write(layout["gpt2_config"])
    for link in layout["links"]:
        os.symlink(link["target"], os.path.join(hub, link["path"]))
    for rel, commit in layout["refs"].items():
        with open(os.path.join(hub, rel), "w") as out:
            out.write(commit)
    os.environ["HF_HUB_CACHE"] = hub  # read by nc_model_open, as huggingface_hub reads it
    snap = os.path.join(hub, layout["resolved"]["nectar-test/st-max"])
    by_name = nectar.Model("nectar-test/st-max", threads=1)
    by_dir = nectar.Model(snap, threads=1)
    check("model_by_hub_name_is_the_snapshot", by_name.kind == "encoder" and
          close(list(by_name.embed("Hello")), list(by_dir.embed("Hello")), 0),
          "%s" % by_name.kind)
    by_name.close()
    by_dir.close()
    del os.environ["HF_HUB_CACHE"]
    q = nectar.Model("nectar-test/tiny-qwen3", threads=1, hf_cache=hub)
    want_q = nectar.Model(os.path.join(hub, layout["resolved"]["nectar-test/tiny-qwen3"]),
                          threads=1)
    check("model_by_hub_name_hf_cache_option",
          q.kind == "decoder" and q.generate("Hi", 4, temperature=0) ==
          want_q.generate("Hi", 4, temperature=0), q.kind)
    q.close()
    want_q.close()
    try:
        nectar.Model("nectar-test/not-there", hf_cache=hub)
        check("model_not_cached_names_hf_download", False, "opened")
    except nectar.NectarError as x:
        check("model_not_cached_names_hf_download",
              "hf download nectar-test/not-there" in str(x) and x.status == "not-found", str(x))
finally:
    shutil.rmtree(hub)
try:
    e.generate("hi", 2)
    check("encoder_generate_says_what_the_model_is", False, "generated")
except nectar.NectarError as x:
    check("encoder_generate_says_what_the_model_is",
          "is an encoder" in str(x) and "nc_" not in str(x), str(x))
check("package_is_typed", os.path.exists(os.path.join(pkg, "py.typed")))
m.close()
e.close()
sys.exit(exit_code())
