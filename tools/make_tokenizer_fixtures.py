#!/usr/bin/env python3
"""Writes the tokenizer and chat-template fixtures for tests/text/.

The references are Hugging Face `tokenizers` (ids, decoding) and
`transformers` (apply_chat_template with the official Qwen3 template), run
on the real Qwen3 tokenizer files in tests/fixtures/qwen3-tokenizer/ and on
two small byte-level BPE tokenizers trained here (committed with the
fixtures).

    python3 tools/make_tokenizer_fixtures.py [--qwen3-tokenizer DIR]

Outputs (all small):
  tests/fixtures/tokenizer/corpus.jsonl        texts + Qwen3 ids + HF decodes
  tests/fixtures/tokenizer/decode_qwen3.jsonl  id sequences (incl. split UTF-8) + HF decodes
  tests/fixtures/tokenizer/gpt2style/tokenizer.json, qwenstyle/tokenizer.json
  tests/fixtures/tokenizer/small_expected.jsonl ids of the corpus under both small tokenizers
  tests/fixtures/tokenizer/cli/                 input.txt and its ids for the CLI test
  tests/fixtures/tokenizer/demo_expected.jsonl  corpus ids under models/demo/tokenizer.json
  tests/fixtures/tokenizer/pipelines.jsonl      overrides of qwenstyle/ (split behaviours,
                                                ByteLevel options, normal forms, unk) + ids
  tests/fixtures/chat/cases.jsonl              messages + options + rendered prompt
"""
import argparse
import json
import os
import random
import shutil
import tempfile

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOK_DIR = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
CHAT_DIR = os.path.join(ROOT, "tests", "fixtures", "chat")

# --------------------------------------------------------------------------
# The corpus: one entry per property worth proving. Names are stable ids
# the C test prints on a mismatch.
CORPUS = [
    ("english", "The quick brown fox jumps over the lazy dog. It's 5 o'clock!"),
    ("english_para", "Hello, world! This is a test of the tokenizer: does it handle "
     "punctuation, (parentheses), \"quotes\", and 'single quotes' correctly?"),
    ("contractions", "I'm sure they'll say we've done it, but you're wrong: she'd "
     "say it's HIS. WE'RE HERE. THEY'LL COME. I'D GO. Don'T stop'S 'Ve"),
    ("contraction_long_s", "it\u017f fine 'S 'ſ 'K 'K"),
    ("russian", "Съешь же ещё этих мягких французских булок, да выпей чаю. Москва — столица России."),
    ("chinese", "我爱自然语言处理。今天天气很好，我们去公园散步吧！机器学习是人工智能的一个分支。"),
    ("japanese", "日本語のテキストです。カタカナとひらがな、そして漢字。東京は日本の首都です。"),
    ("korean", "안녕하세요! 한국어 텍스트입니다. 서울은 대한민국의 수도입니다."),
    ("arabic", "مرحبا بالعالم! هذه جملة باللغة العربية. القاهرة عاصمة مصر."),
    ("hindi", "नमस्ते दुनिया! यह हिंदी में एक वाक्य है। दिल्ली भारत की राजधानी है।"),
    ("greek_hebrew_thai", "Καλημέρα κόσμε שלום עולם สวัสดีชาวโลก"),
    ("mixed_scripts", "English, Русский, 中文, 日本語, 한국어, العربية, हिन्दी mixed: abcПривет你好"),
    ("emoji", "I love 🍕 and 🎉! 😀😃😄 👍🏽 ❤️ ☕"),
    ("emoji_zwj", "Family: 👨\u200d👩\u200d👧\u200d👦 rainbow flag: 🏳️\u200d🌈 woman technologist: 👩🏻\u200d💻"),
    ("emoji_flags", "Flags: 🇺🇸🇬🇧🇯🇵🇩🇪🇫🇷 🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"),
    ("code_c", "#include <stdio.h>\n\nint main(int argc, char **argv) {\n    for (int i = 0; i < argc; i++) {\n"
     "        printf(\"%d: %s\\n\", i, argv[i]);\n    }\n    return 0;\n}\n"),
    ("code_python", "def fib(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    a, b = 0, 1\n"
     "    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n\nclass Foo:\n\tdef bar(self):\n"
     "\t\treturn {'x': [1, 2, 3]}  # comment\n"),
    ("code_json", '{"name": "nectar", "version": [0, 1, 0], "ok": true, "nested": {"a": null}}'),
    ("digits", "1 12 123 1234 12345 123456789 3.14159 -42 1,000,000 2024-01-01 0x1F 1e-10 ١٢٣ ४५६ ⅷ ²³"),
    ("digit_run", "31415926535897932384626433832795028841971693993751058209749445923078164062862089986280"),
    ("whitespace", "a  b   c    d\t\te\t \tf  \n  g \n\n\n h\r\n i \r\n\r\n j   "),
    ("newline_runs", "\n\n\nline1\n\n\n\nline2\r\r\n\n\r\nend\n"),
    ("trailing_spaces", "trailing spaces   \nmore trailing\t\t\n   leading and trailing   "),
    ("only_spaces", "          "),
    ("only_newlines", "\n\n\n\n"),
    ("unicode_spaces", "nbsp:\u00a0x em:\u2003x ideo:\u3000x thin:\u2009x nel:\u0085x zwsp:\u200bx bom:\ufeffx "
     "ogham:\u1680x mongol:\u180ex narrow:\u202fx"),
    # U+180E is a space to PCRE2's \s but not to Oniguruma's (HF): pretok.c
    # spells \s out; U+001C..U+001F are spaces to Python but not to either.
    ("mongolian_vowel_separator", "\u180e're a\u180e'b x\u180e(y \u180e.world \u180e \u180e\n"),
    ("info_separators", "a\x1cb\x1d c\x1e\x1f d\u2060e\u200ef\u061cg"),
    ("special_literals", "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\nhmm\n</think>\n\nHi!<|im_end|><|endoftext|>"),
    ("special_adjacent", "x<|endoftext|>y<|endoftext|><|endoftext|> <|im_end|> z<think></think>"),
    ("special_partial", "<|im_start <|im_end| <|endoftext| <think <|fim_prefix|> <tool_call> </tool_call> <|>"),
    ("nfc_combining", "Cafe\u0301 re\u0301sume\u0301 n\u0303 A\u030a \u1e9b\u0323 ha\u0308ngen"),
    ("nfc_hangul_jamo", "\u1112\u1161\u11ab\u1100\u1173\u11af"),
    ("nfc_precomposed", "Café résumé ñ Å über"),
    ("nfc_singletons", "\u212b \u2126 \u0344 \u0958 \ufb2c"),
    ("utf8_edges", "\u0080\u00ff\u0100\u07ff\u0800\uffff\U00010000\U0010ffff \ufffd \ue000 \U000f0000"),
    ("control_chars", "tab\there bell\x07 esc\x1b[0m del\x7f nul\x00byte"),
    ("long_word", "Pneumonoultramicroscopicsilicovolcanoconiosis" * 4),
    ("repeated_chars", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + "!" * 30 + "=" * 40 + "-" * 17),
    ("urls_emails", "Visit https://example.com/path?q=1&x=y#frag or mail me@example.org."),
    ("markdown", "# Title\n\n- item **bold** _it_\n- `code`\n\n```c\nx++;\n```\n> quote\n| a | b |\n|---|---|"),
    ("apostrophes_misc", "rock 'n' roll, ’curly’ ‘quotes’, «guillemets», „low“ l'homme"),
    ("punct_runs", "...?!?!... ;;; ::: --- ___ *** ### @@@ $$$ %%% ^^^ &&& (((  ))) [[[ ]]] {{{ }}}"),
    ("math_symbols", "∑∫√∞≠≤≥±×÷ αβγ ∀x∈ℝ: x²≥0 → ⊢ ∧∨¬"),
    ("empty", ""),
    ("single_space", " "),
    ("single_char", "a"),
]

# The same corpus is run through both small tokenizers.
SMALL_EXTRA = [
    ("added_flags", "a <mask> b<mask>c  <mask>  [ROW] x[ROW]y <sep>d hello world hello worlds "
     "<mask>\n\n<sep>\t[ROW]\u00a0z"),
    # An added token spelled with characters outside the byte alphabet (a
    # space) decodes to its own UTF-8; one inside it ("Ġ") to the byte.
    ("added_decode", "Ġweird ġ<mask>hello world<think>x Ġweird ġ"),
]


def decode_cases(tok, rng):
    """Random id sequences, including byte tokens that split characters."""
    vocab = tok.get_vocab(with_added_tokens=True)
    max_id = max(vocab.values())
    byte_ids = [vocab[c] for c in BYTE_CHARS if c in vocab]
    cases = []
    for k in range(24):
        n = rng.randint(1, 40)
        ids = []
        for _ in range(n):
            r = rng.random()
            if r < 0.45:
                ids.append(rng.choice(byte_ids))  # lone bytes: mostly invalid UTF-8
            elif r < 0.55:
                ids.append(rng.randint(max_id - 30, max_id))  # added / special tokens
            else:
                ids.append(rng.randint(0, max_id))
        cases.append(ids)
    # Hand-made: a 3-byte and a 4-byte character split over byte tokens, and
    # truncated at the end.
    def b(x):
        return vocab[BYTE_CHARS[x]]
    cases.append([b(0xE4), b(0xBD), b(0xA0), b(0xF0), b(0x9F), b(0x98), b(0x80)])
    cases.append([b(0x41), b(0xF0), b(0x9F), b(0x98)])
    cases.append([b(0xE4), b(0x41), b(0xBD), b(0xC0), b(0xAF), b(0xED), b(0xA0), b(0x80)])
    cases.append([b(0xF4), b(0x90), b(0x80), b(0x80), b(0xF5), b(0xFF), b(0xE0), b(0x80)])
    out = []
    for ids in cases:
        out.append({"ids": ids,
                    "text": tok.decode(ids, skip_special_tokens=False),
                    "text_skip_special": tok.decode(ids, skip_special_tokens=True)})
    return out


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_CHARS = [bytes_to_unicode()[b] for b in range(256)]

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")

TRAIN_TEXT = [t for _, t in CORPUS] * 3 + [
    "In the beginning God created the heaven and the earth. And the earth was without form, and void;"
    " and darkness was upon the face of the deep.",
    "The tokenizer splits text into pieces; each piece is merged by rank. Merges are learned from data.",
]


def train_small(kind):
    """A few-hundred-token byte-level BPE of each pipeline the C loader accepts."""
    tok = Tokenizer(models.BPE())
    if kind == "gpt2style":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    else:
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.train_from_iterator(TRAIN_TEXT, trainer=trainer)
    tok.add_tokens([
        AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False),
        AddedToken("[ROW]", rstrip=True, normalized=False),
        AddedToken("<sep>", single_word=True, normalized=False),
        AddedToken("hello world", single_word=True, normalized=True),
        AddedToken("<think>", normalized=False, special=False),
        AddedToken("Ġweird ġ", normalized=False, special=False),
    ])
    return tok


def save_small(tok, kind):
    folder = os.path.join(TOK_DIR, kind)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "tokenizer.json")
    doc = json.loads(tok.to_str())
    if kind == "gpt2style":
        # The legacy merges format ("a b" strings), which older files use.
        doc["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m
                                  for m in doc["model"]["merges"]]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return Tokenizer.from_file(path)  # the reference is what HF reads back


PIPELINE_TEXTS = [
    "Hello world 123 and 4567xx, it's   x  9x9\n\n end ",
    "Café ﬁne ① Ⅻ ｆｕｌｌ x\u0301 ",
    "<|im_end|>ab 12<|im_end|>  ",
    "",
]


def pipeline_variants(base_model):
    """Overrides of the small Qwen-style file: each split behaviour with and
    without invert (including a regex that matches empty strings), literal
    String patterns, ByteLevel options, other normal forms, ignore_merges
    and unk handling. Each is {"set": top-level fields, "model_set": fields
    of "model"}; the C test applies them to the same base file."""
    bl_plain = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                "use_regex": False}
    out = []
    for beh in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"):
        for inv in (False, True):
            for pat in ({"Regex": r"\d+|x*"}, {"String": " "}):
                name = "split_%s_%s_%s" % (beh, "inv" if inv else "fwd", list(pat)[0])
                out.append((name, {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                    {"type": "Split", "pattern": pat, "behavior": beh, "invert": inv},
                    bl_plain]}}, {}))
    for aps in (False, True):
        for rx in (False, True):
            out.append(("bytelevel_prefix%d_regex%d" % (aps, rx), {"pre_tokenizer": {
                "type": "ByteLevel", "add_prefix_space": aps, "trim_offsets": True,
                "use_regex": rx}}, {}))
    out.append(("bytelevel_after_split_with_prefix", {"pre_tokenizer": {
        "type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"\s+"}, "behavior": "Removed", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True}]}}, {}))
    for nf in ("NFD", "NFKC", "NFKD"):
        out.append(("normalizer_" + nf, {"normalizer": {"type": nf}}, {}))
    out.append(("normalizer_sequence", {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "NFKD"}, {"type": "NFC"}]}}, {}))
    out.append(("normalizer_none", {"normalizer": None}, {}))
    out.append(("ignore_merges", {}, {"ignore_merges": True}))

    # Bytes missing from the vocabulary: unk (fused or not) or dropped.
    vocab = dict(base_model["vocab"])
    for ch in "lo1x":
        vocab.pop(ch, None)
    merges = [[a, b] for a, b in base_model["merges"]
              if a in vocab and b in vocab and a + b in vocab]
    vocab["<unk>"] = max(vocab.values()) + 1
    out.append(("unk_plain", {}, {"vocab": vocab, "merges": merges, "unk_token": "<unk>"}))
    out.append(("unk_fused", {}, {"vocab": vocab, "merges": merges, "unk_token": "<unk>",
                                  "fuse_unk": True}))
    out.append(("no_unk_drops_bytes", {}, {"vocab": vocab, "merges": merges}))
    return out


def pipeline_rows():
    base = json.load(open(os.path.join(TOK_DIR, "qwenstyle", "tokenizer.json"), encoding="utf-8"))
    rows = []
    for name, top, model in pipeline_variants(base["model"]):
        doc = json.loads(json.dumps(base))
        doc.update(top)
        doc["model"].update(model)
        tok = Tokenizer.from_str(json.dumps(doc))
        cases = [{"text": t, "ids": tok.encode(t, add_special_tokens=False).ids}
                 for t in PIPELINE_TEXTS]
        rows.append({"name": name, "set": top, "model_set": model, "cases": cases})
    return rows


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=True) + "\n")


# --------------------------------------------------------------------------
# Chat template cases.

SYS = {"role": "system", "content": "You are a helpful assistant."}
CHAT_CASES = [
    ("user_only", [{"role": "user", "content": "Hello!"}], {}),
    ("user_gen", [{"role": "user", "content": "Hello!"}], {"add_generation_prompt": True}),
    ("user_gen_nothink", [{"role": "user", "content": "Hello!"}],
     {"add_generation_prompt": True, "enable_thinking": False}),
    ("system_user_gen", [SYS, {"role": "user", "content": "What is 2+2?"}],
     {"add_generation_prompt": True}),
    ("system_user_gen_nothink", [SYS, {"role": "user", "content": "What is 2+2?"}],
     {"add_generation_prompt": True, "enable_thinking": False}),
    ("multi_turn", [SYS, {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "Hello! How can I help?"},
                    {"role": "user", "content": "Tell me a joke."}],
     {"add_generation_prompt": True}),
    ("multi_turn_nothink", [{"role": "user", "content": "Hi"},
                            {"role": "assistant", "content": "Hello!"},
                            {"role": "user", "content": "Bye"}],
     {"add_generation_prompt": True, "enable_thinking": False}),
    ("history_with_think", [{"role": "user", "content": "2+2?"},
                            {"role": "assistant", "content": "<think>\nsimple sum\n</think>\n\n4"},
                            {"role": "user", "content": "3+3?"}],
     {"add_generation_prompt": True}),
    ("last_assistant_with_think", [{"role": "user", "content": "2+2?"},
                                   {"role": "assistant",
                                    "content": "<think>\nsimple sum\n</think>\n\n4"}], {}),
    ("last_assistant_plain", [{"role": "user", "content": "2+2?"},
                              {"role": "assistant", "content": "4"}], {}),
    ("reasoning_content_field", [{"role": "user", "content": "Why?"},
                                 {"role": "assistant", "content": "Because.",
                                  "reasoning_content": "\nthinking hard\n\n"}], {}),
    ("reasoning_after_query_not_last", [{"role": "user", "content": "Q"},
                                        {"role": "assistant", "content": "A1",
                                         "reasoning_content": "R1"},
                                        {"role": "assistant", "content": "A2"}],
     {"add_generation_prompt": True}),
    ("think_odd_newlines", [{"role": "user", "content": "x"},
                            {"role": "assistant",
                             "content": "pre<think>\n\n\nA\n\n</think>\n\n\nB</think>\nC"}], {}),
    ("system_later", [{"role": "user", "content": "a"}, {"role": "system", "content": "b"},
                      {"role": "user", "content": "c"}], {"add_generation_prompt": True}),
    ("tool_results", [{"role": "user", "content": "weather?"},
                      {"role": "assistant", "content": "Let me check."},
                      {"role": "tool", "content": "{\"temp\": 20}"},
                      {"role": "tool", "content": "{\"rain\": false}"}],
     {"add_generation_prompt": True}),
    ("user_tool_response_wrapped", [{"role": "user", "content": "q"},
                                    {"role": "assistant", "content": "<think>r</think>a"},
                                    {"role": "user",
                                     "content": "<tool_response>\nok\n</tool_response>"},
                                    {"role": "assistant", "content": "<think>r2</think>done"}],
     {}),
    ("unicode_content", [SYS, {"role": "user", "content": "Привет 👋 你好\n\nline2  "}],
     {"add_generation_prompt": True, "enable_thinking": False}),
    ("empty_content", [{"role": "user", "content": ""}], {"add_generation_prompt": True}),
]


def chat_rows(qwen_dir):
    from transformers import AutoTokenizer

    tmp = tempfile.mkdtemp()
    try:
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(qwen_dir, f), tmp)
        tok = AutoTokenizer.from_pretrained(tmp)
        rows = []
        for name, msgs, opts in CHAT_CASES:
            text = tok.apply_chat_template(msgs, tokenize=False, **opts)
            rows.append({"name": name, "messages": msgs,
                         "add_generation_prompt": bool(opts.get("add_generation_prompt", False)),
                         "enable_thinking": bool(opts.get("enable_thinking", True)),
                         "expected": text})
        return rows
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qwen3-tokenizer", default=os.path.join(ROOT, "tests", "fixtures", "qwen3-tokenizer"))
    args = ap.parse_args()
    qwen_dir = args.qwen3_tokenizer
    os.makedirs(TOK_DIR, exist_ok=True)
    os.makedirs(CHAT_DIR, exist_ok=True)

    qwen = Tokenizer.from_file(os.path.join(qwen_dir, "tokenizer.json"))
    rows = []
    for name, text in CORPUS:
        ids = qwen.encode(text, add_special_tokens=False).ids
        rows.append({"name": name, "text": text, "ids": ids,
                     "decoded": qwen.decode(ids, skip_special_tokens=False),
                     "decoded_skip_special": qwen.decode(ids, skip_special_tokens=True)})
    write_jsonl(os.path.join(TOK_DIR, "corpus.jsonl"), rows)
    write_jsonl(os.path.join(TOK_DIR, "decode_qwen3.jsonl"), decode_cases(qwen, random.Random(7)))

    small_rows = []
    for kind in ("gpt2style", "qwenstyle"):
        tok = save_small(train_small(kind), kind)
        for name, text in CORPUS + SMALL_EXTRA:
            ids = tok.encode(text, add_special_tokens=False).ids
            small_rows.append({"tokenizer": kind, "name": name, "text": text, "ids": ids,
                               "decoded": tok.decode(ids, skip_special_tokens=False)})
    write_jsonl(os.path.join(TOK_DIR, "small_expected.jsonl"), small_rows)

    write_jsonl(os.path.join(TOK_DIR, "pipelines.jsonl"), pipeline_rows())

    # The demo model's own tokenizer (trained elsewhere, models/demo/): its ids
    # for the corpus, keyed by an FNV-1a hash of the file so the C test can
    # tell when the fixture is stale.
    demo_path = os.path.join(ROOT, "models", "demo", "tokenizer.json")
    if os.path.exists(demo_path):
        raw = open(demo_path, "rb").read()
        demo = Tokenizer.from_file(demo_path)
        rows = [{"fnv1a64": "%016x" % fnv1a64(raw)}]
        for name, text in CORPUS:
            rows.append({"name": name, "text": text,
                         "ids": demo.encode(text, add_special_tokens=False).ids,
                         "decoded": demo.decode(demo.encode(text, add_special_tokens=False).ids,
                                                skip_special_tokens=False)})
        write_jsonl(os.path.join(TOK_DIR, "demo_expected.jsonl"), rows)

    # For tests/text/test_tokenize_cli.sh: one input file (exact bytes, with
    # CRLF, tabs, special tokens, no final newline) and the ids HF gives.
    cli_dir = os.path.join(TOK_DIR, "cli")
    os.makedirs(cli_dir, exist_ok=True)
    cli_text = ("Tokenize me: 12345 apples\r\n\tand 🍕 «pizza» — 你好!<|im_end|>\n"
                "<think>\nok</think>  trailing  ")
    with open(os.path.join(cli_dir, "input.txt"), "wb") as f:
        f.write(cli_text.encode("utf-8"))
    for kind, tok in (("qwen3", qwen), ("qwenstyle", Tokenizer.from_file(
            os.path.join(TOK_DIR, "qwenstyle", "tokenizer.json")))):
        ids = tok.encode(cli_text, add_special_tokens=False).ids
        with open(os.path.join(cli_dir, "ids_%s.txt" % kind), "w") as f:
            f.write(" ".join(map(str, ids)) + "\n")

    write_jsonl(os.path.join(CHAT_DIR, "cases.jsonl"), chat_rows(qwen_dir))
    print("wrote fixtures to", TOK_DIR, "and", CHAT_DIR)


if __name__ == "__main__":
    main()
