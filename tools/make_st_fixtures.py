#!/usr/bin/env python3
"""Sentence-transformers folders for the batch-embedding and rerank tests (tests/api/).

Writes, under tests/fixtures/st/, tiny random ModernBERT encoders saved by
sentence-transformers itself (SentenceTransformer(modules=...).save), one per pooling mode,
each with ref.json: the texts, the prompt name used, and SentenceTransformer(dir).encode's
output for them, computed by the model RELOADED from the saved folder:
  st_cls/   pooling cls, rewritten to the OLDER on-disk form (module types
            sentence_transformers.models.*, pooling_mode_cls_token flags, sentence_bert_config.json
            with max_seq_length 16, as most hub models still are); texts longer than 16 tokens
            are truncated.
  st_mean/  pooling mean with include_prompt=False, prompts {"query": "query: ", "document": ""},
            default_prompt_name "query", max_seq_length 32 (tokenizer_config.json, the 6.x form).
  st_max/   pooling max + Normalize.
  st_last/  pooling lasttoken + Normalize.
  st_wmean/ pooling weightedmean.
  rerank/   a ModernBertForSequenceClassification with one label (a cross-encoder) and
            ref.json: query, documents, and HF's logits for each (query, document) pair
            tokenized as tokenizer(query, document) (the pair template "[CLS] A [SEP] B [SEP]").
The tokenizer is tests/fixtures/modernbert/mb_base's (byte-level BPE, "[CLS] $A [SEP]").

Run: /path/to/python tools/make_st_fixtures.py   (seconds; torch, transformers,
sentence-transformers)
"""
import json
import os
import shutil
import tempfile

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from tokenizers import Tokenizer, processors
from transformers import (ModernBertConfig, ModernBertForSequenceClassification, ModernBertModel,
                          PreTrainedTokenizerFast)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "tests", "fixtures", "st")
TOK = os.path.join(HERE, "..", "tests", "fixtures", "modernbert", "mb_base", "tokenizer.json")

TEXTS = [
    "Paris is the capital of France.",
    "a",
    "The quick brown fox jumps over the lazy dog, and then it runs far away into the woods "
    "where nobody can see it any more.",
    "Café, naïve, résumé.",
    "Numbers like 12345 and 3.14159 appear in text too.",
]


def config(n_labels=None):
    c = ModernBertConfig(vocab_size=427, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=128, local_attention=16,
                         global_attn_every_n_layers=2, pad_token_id=425, cls_token_id=423,
                         sep_token_id=424, bos_token_id=423, eos_token_id=424,
                         classifier_pooling="mean", initializer_range=0.2)
    if n_labels:
        c.num_labels = n_labels
    return c


def base_folder(tmp, seed, cls=ModernBertModel, n_labels=None):
    torch.manual_seed(seed)
    m = cls(config(n_labels)).eval()
    m.save_pretrained(tmp)
    tok = PreTrainedTokenizerFast(tokenizer_file=TOK, cls_token="[CLS]", sep_token="[SEP]",
                                  pad_token="[PAD]", mask_token="[MASK]", unk_token="[UNK]")
    tok.save_pretrained(tmp)
    return tok


def make(name, seed, mode, normalize=False, include_prompt=True, max_seq=None, prompts=None,
         default_prompt=None, legacy=False):
    out = os.path.join(ROOT, name)
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        base_folder(tmp, seed)
        t = Transformer(tmp, max_seq_length=max_seq)
        mods = [t, Pooling(32, pooling_mode=mode, include_prompt=include_prompt)]
        if normalize:
            mods.append(Normalize())
        st = SentenceTransformer(modules=mods, prompts=prompts, default_prompt_name=default_prompt)
        st.save(out)
    for junk in ("README.md",):
        if os.path.exists(os.path.join(out, junk)):
            os.remove(os.path.join(out, junk))
    if legacy:
        to_legacy(out, mode, max_seq)
    model = SentenceTransformer(out, device="cpu")
    emb = model.encode(TEXTS, batch_size=2, convert_to_numpy=True)
    ref = {"texts": TEXTS, "prompt_name": default_prompt, "pooling": mode,
           "normalize": normalize, "embeddings": emb.astype(float).tolist()}
    with open(os.path.join(out, "ref.json"), "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
    print(name, emb.shape)


def to_legacy(out, mode, max_seq):
    """The on-disk form of sentence-transformers 2..5, which 6.x still reads."""
    with open(os.path.join(out, "modules.json")) as f:
        mods = json.load(f)
    legacy_types = {"Transformer": "sentence_transformers.models.Transformer",
                    "Pooling": "sentence_transformers.models.Pooling",
                    "Normalize": "sentence_transformers.models.Normalize"}
    for m in mods:
        m["type"] = legacy_types[m["type"].rsplit(".", 1)[1]]
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump(mods, f, indent=2)
    flags = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
             "max": "pooling_mode_max_tokens", "lasttoken": "pooling_mode_lasttoken"}
    pool = {"word_embedding_dimension": 32}
    for k in ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
              "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
              "pooling_mode_lasttoken"):
        pool[k] = k == flags[mode]
    pool["include_prompt"] = True
    with open(os.path.join(out, "1_Pooling", "config.json"), "w") as f:
        json.dump(pool, f, indent=2)
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": max_seq, "do_lower_case": False}, f, indent=2)
    tc = os.path.join(out, "tokenizer_config.json")
    with open(tc) as f:
        cfg = json.load(f)
    cfg.pop("model_max_length", None)
    with open(tc, "w") as f:
        json.dump(cfg, f, indent=2)


def make_rerank():
    out = os.path.join(ROOT, "rerank")
    shutil.rmtree(out, ignore_errors=True)
    tok = base_folder(out, 7, ModernBertForSequenceClassification, n_labels=1)
    # the pair template HF's BERT-style tokenizers carry
    t = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    t.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", 423), ("[SEP]", 424)])
    t.save(os.path.join(out, "tokenizer.json"))
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(out, "tokenizer.json"),
                                  cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                                  mask_token="[MASK]", unk_token="[UNK]")
    model = ModernBertForSequenceClassification.from_pretrained(out, attn_implementation="eager")
    model.eval()
    query = "What is the capital of France?"
    docs = ["Paris is the capital of France.", "The fox jumps over the dog.",
            "Berlin is the capital of Germany.", "a"]
    logits = []
    with torch.no_grad():
        for d in docs:
            enc = tok(query, d, return_tensors="pt")
            enc.pop("token_type_ids", None)
            logits.append(float(model(**enc).logits[0, 0]))
            ids = enc["input_ids"][0].tolist()
    with open(os.path.join(out, "ref.json"), "w") as f:
        json.dump({"query": query, "documents": docs, "logits": logits}, f, indent=1)
    print("rerank", logits, ids)


def main():
    os.makedirs(ROOT, exist_ok=True)
    make("st_cls", 1, "cls", max_seq=16, legacy=True)
    make("st_mean", 2, "mean", include_prompt=False, max_seq=32,
         prompts={"query": "query: ", "document": ""}, default_prompt="query")
    make("st_max", 3, "max", normalize=True)
    make("st_last", 4, "lasttoken", normalize=True)
    make("st_wmean", 5, "weightedmean")
    make_rerank()


if __name__ == "__main__":
    main()
