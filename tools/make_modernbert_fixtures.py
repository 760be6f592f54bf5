#!/usr/bin/env python3
"""Fixtures for the ModernBERT-family encoder tests (tests/encoders/).

Writes, under tests/fixtures/modernbert/:
  tok_bytelevel/tokenizer.json  a small ModernBERT-style tokenizer: byte-level BPE
      (pre_tokenizer ByteLevel(add_prefix_space=False), NFC normalizer, ByteLevel
      decoder) with the TemplateProcessing post-processor "[CLS] $A [SEP]" and
      ModernBERT's special tokens ([MASK] with lstrip=True as in the real file).
  tok_spbpe/tokenizer.json  a small Gemma/mmBERT-style tokenizer: BPE with
      byte_fallback (<0x00>..<0xFF> tokens), fuse_unk, normalizer Replace(" " -> "▁"),
      no pre-tokenizer, decoder Sequence[Replace("▁" -> " "), ByteFallback, Fuse],
      post-processor TemplateProcessing "<bos> $A <eos>".
  tok_llamasp/tokenizer.json  the Llama-2 variant: normalizer Prepend("▁") + Replace, decoder
      + Strip(" ", 1, 0), post-processor "<bos> $A".
  tok_*.jsonl  per test string: HF ids with add_special_tokens=True and HF decode.
  mb_mlm/   tiny ModernBertForMaskedLM, byte-level tokenizer, LEGACY config keys
            (global_rope_theta=160000, local_rope_theta=10000, global_attn_every_n_layers=3).
  mm_cls/   tiny mmBERT-shaped ModernBertForSequenceClassification (sp tokenizer,
            v5 rope_parameters, both thetas 160000, mean pooling, 3 labels).
  mb_base/  the ModernBertModel (no head) of mb_mlm, saved without the "model." prefix.
  mb_bf16/  the same encoder with its weights stored as bf16 (reference in fp32 math).
  mb_hd48/  an encoder with 48-wide heads (blocks of the 64-row QKV product split heads,
            so RoPE runs as its own pass) and window 16, bf16 weights; ref/ holds a
            padded batch with a row of 76 tokens (several query blocks, band edges).
  mb_mlm/ and mm_cls/ also have ref_long/: the same batch plus a row of 77 / 51 tokens.
  Each model folder has ref/: input_ids.npy, attention_mask.npy (int32 [B, L]),
  hidden.npy ([layers+1, B, L, D]: embeddings output, then each layer),
  last.npy (after final_norm), and logits.npy (MLM [B, L, V] / classifier [B, labels]);
  the reference is computed by the model RELOADED from the saved folder (eager attention,
  float32), so the config conventions are what HF itself reads back.

Run: python3 tools/make_modernbert_fixtures.py [--only mb_hd48]
"""
import argparse
import json
import os
import shutil

import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (ModernBertConfig, ModernBertForMaskedLM, ModernBertForSequenceClassification,
                          ModernBertModel)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "modernbert")

CORPUS = [
    "Paris is the capital of France.",
    "The quick brown fox jumps over the lazy dog.",
    "Transformers run on the neural engine with fixed shapes.",
    "An encoder turns text into vectors for search and classification.",
    "Berlin is the capital of Germany and Rome is the capital of Italy.",
    "Numbers like 12345 and 3.14159 appear in text too.",
    "  leading spaces, double  spaces and\ttabs\nand new lines.",
    "It's what they're doing: don't stop, we'll see.",
    "Café, naïve, résumé: accents are common in French words.",
    "the theory of everything is there in the thesis",
] * 3

TESTS = [
    "Paris is the [MASK] of France.",
    "Hello world",
    "",
    " ",
    "  leading and trailing  ",
    "tabs\tand\nnew lines\r\n",
    "Café naïve résumé",
    "日本語のテキスト",
    "emoji 🤗🚀 mixed",
    "It's they're we'll 12345 3.14",
    "[CLS] literal specials [SEP] inside",
    "a[MASK]b and x  [MASK] y",
    "<mask> and <bos> literal",
    "the theory thesis there",
    "\u00a0non-breaking\u2003em space",
    "Ünïcödé ＡＢＣ ﬁ",
]


def bytelevel_tokenizer():
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = ["|||IP_ADDRESS|||", "<|padding|>", "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    trainer = trainers.BpeTrainer(vocab_size=420, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[], show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    from tokenizers import AddedToken
    for s in specials:
        tok.add_special_tokens([AddedToken(s, special=True, normalized=False, lstrip=(s == "[MASK]"))])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok


def spbpe_tokenizer():
    # Train merges on "▁"-joined text with no pre-tokenizer (as SentencePiece BPE sees it),
    # then lay out the vocabulary like Gemma: specials, 256 byte tokens, then pieces.
    base = Tokenizer(models.BPE())
    base.normalizer = normalizers.Replace(" ", "▁")
    trainer = trainers.BpeTrainer(vocab_size=360, special_tokens=[], show_progress=False,
                                  limit_alphabet=60)
    base.train_from_iterator(CORPUS, trainer)
    trained = json.loads(base.to_str())["model"]
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    vocab = {}
    for s in specials:
        vocab[s] = len(vocab)
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True,
                               byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = None
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    from tokenizers import AddedToken
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", pair="<bos> $A <eos> $B:1 <eos>:1",
        special_tokens=[("<bos>", vocab["<bos>"]), ("<eos>", vocab["<eos>"])])
    return tok


def llama_sp_tokenizer():
    # The Llama-2 variant of the same pipeline: Prepend("▁") before Replace, a Strip decoder
    # that drops the leading space again, template "<bos> $A".
    tok = spbpe_tokenizer()
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A <bos> $B:1", special_tokens=[("<bos>", tok.token_to_id("<bos>"))])
    return tok


def write_tokenizer(tok, name):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    tok.save(os.path.join(d, "tokenizer.json"))
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    with open(os.path.join(ROOT, name + ".jsonl"), "w", encoding="utf-8") as f:
        for t in TESTS:
            ids = tok.encode(t, add_special_tokens=True).ids
            plain = tok.encode(t, add_special_tokens=False).ids
            f.write(json.dumps({"text": t, "ids": ids, "ids_plain": plain,
                                "decoded": tok.decode(ids, skip_special_tokens=True),
                                "decoded_all": tok.decode(ids, skip_special_tokens=False)},
                               ensure_ascii=False) + "\n")
    return tok


def pad_batch(tok, texts):
    rows = [tok.encode(t, add_special_tokens=True).ids for t in texts]
    L = max(len(r) for r in rows)
    pad = 0
    ids = np.full((len(rows), L), pad, dtype=np.int32)
    mask = np.zeros((len(rows), L), dtype=np.int32)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    return ids, mask


def write_ref(model_cls, d, ids, mask, head, sub="ref"):
    # float32 math whatever the stored dtype (bf16 weights are upcast exactly)
    m = model_cls.from_pretrained(d, attn_implementation="eager", dtype=torch.float32).eval()
    with torch.no_grad():
        out = m(input_ids=torch.tensor(ids, dtype=torch.long), attention_mask=torch.tensor(mask),
                output_hidden_states=True)
    r = os.path.join(d, sub)
    os.makedirs(r, exist_ok=True)
    np.save(os.path.join(r, "input_ids.npy"), ids)
    np.save(os.path.join(r, "attention_mask.npy"), mask)
    hs = out.hidden_states
    np.save(os.path.join(r, "hidden.npy"), np.stack([h.numpy() for h in hs]).astype(np.float32))
    if head is None:
        np.save(os.path.join(r, "last.npy"), out.last_hidden_state.numpy().astype(np.float32))
    else:
        np.save(os.path.join(r, "logits.npy"), out.logits.numpy().astype(np.float32))
    return m, out


def fix_legacy_config(d):
    p = os.path.join(d, "config.json")
    c = json.load(open(p))
    c.pop("rope_parameters", None)
    c.pop("layer_types", None)
    c["global_rope_theta"] = 160000.0
    c["local_rope_theta"] = 10000.0
    c["global_attn_every_n_layers"] = 3
    json.dump(c, open(p, "w"), indent=2, sort_keys=True)


def make_hd48():
    """mb_hd48/: 2 heads of 48, 3 layers (global 0), window 16, bf16 weights."""
    torch.manual_seed(48)
    tb = Tokenizer.from_file(os.path.join(ROOT, "tok_bytelevel", "tokenizer.json"))
    cfg = ModernBertConfig(vocab_size=tb.get_vocab_size(), hidden_size=96, intermediate_size=80,
                           num_hidden_layers=3, num_attention_heads=2, local_attention=16,
                           max_position_embeddings=512, pad_token_id=tb.token_to_id("[PAD]"),
                           cls_token_id=tb.token_to_id("[CLS]"), sep_token_id=tb.token_to_id("[SEP]"),
                           bos_token_id=tb.token_to_id("[CLS]"), eos_token_id=tb.token_to_id("[SEP]"),
                           global_rope_theta=160000.0, local_rope_theta=10000.0, initializer_range=0.2)
    m = ModernBertModel(cfg).eval()
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "norm" in n:
                p.add_(torch.randn_like(p) * 0.2)
    d = os.path.join(ROOT, "mb_hd48")
    m.to(torch.bfloat16).save_pretrained(d)
    fix_legacy_config(d)
    ids, mask = pad_batch(tb, ["Paris is the capital of France.", " ".join(CORPUS[:4]), "Hello"])
    ids[mask == 0] = cfg.pad_token_id
    write_ref(ModernBertModel, d, ids, mask, None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["mb_hd48"], help="write just this fixture")
    if ap.parse_args().only:
        make_hd48()
        return
    torch.manual_seed(0)
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)
    tb = write_tokenizer(bytelevel_tokenizer(), "tok_bytelevel")
    ts = write_tokenizer(spbpe_tokenizer(), "tok_spbpe")
    write_tokenizer(llama_sp_tokenizer(), "tok_llamasp")

    # ModernBERT-shaped: byte-level tokenizer, two thetas, window 16 (+-8), 4 layers
    # (global 0, 3), MLM head tied to the embeddings.
    V = tb.get_vocab_size()
    cfg = ModernBertConfig(vocab_size=V, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                           num_attention_heads=4, local_attention=16, max_position_embeddings=512,
                           pad_token_id=tb.token_to_id("[PAD]"), cls_token_id=tb.token_to_id("[CLS]"),
                           sep_token_id=tb.token_to_id("[SEP]"), bos_token_id=tb.token_to_id("[CLS]"),
                           eos_token_id=tb.token_to_id("[SEP]"), global_rope_theta=160000.0,
                           local_rope_theta=10000.0, initializer_range=0.2)
    m = ModernBertForMaskedLM(cfg).eval()
    with torch.no_grad():  # non-trivial norm weights and decoder bias
        for n, p in m.named_parameters():
            if "norm" in n or "bias" in n:
                p.add_(torch.randn_like(p) * 0.2)
    d = os.path.join(ROOT, "mb_mlm")
    m.save_pretrained(d)
    fix_legacy_config(d)
    shutil.copy(os.path.join(ROOT, "tok_bytelevel", "tokenizer.json"), d)
    texts = ["The quick brown fox jumps over the lazy dog, and Paris is the capital of France.",
             "Paris is the [MASK] of France.", "Hello"]
    ids, mask = pad_batch(tb, texts)
    ids[mask == 0] = cfg.pad_token_id
    mlm, _ = write_ref(ModernBertForMaskedLM, d, ids, mask, "mlm")
    # ref_long/: the batch plus a row long enough for several 32-query attention blocks
    # and band edges inside them (ref/ stays at 32 tokens: the ANE tests compile bucket 32)
    ids_l, mask_l = pad_batch(tb, texts + [" ".join(CORPUS[:4])])
    ids_l[mask_l == 0] = cfg.pad_token_id
    write_ref(ModernBertForMaskedLM, d, ids_l, mask_l, "mlm", "ref_long")
    # fill-mask reference for the command test: top-5 at the [MASK] of text 2
    one = np.array([tb.encode(texts[1]).ids], dtype=np.int64)
    with torch.no_grad():
        lg = mlm(input_ids=torch.tensor(one)).logits[0]
    pos = int(np.where(one[0] == tb.token_to_id("[MASK]"))[0][0])
    pr = torch.softmax(lg[pos], -1)
    top = torch.topk(pr, 5)
    json.dump({"text": texts[1], "ids": top.indices.tolist(), "probs": top.values.tolist(),
               "tokens": [tb.decode([i]) for i in top.indices.tolist()]},
              open(os.path.join(d, "ref", "fill_mask.json"), "w"), indent=1)

    # The bare encoder (ModernBertModel) of the same weights: keys without "model.".
    db = os.path.join(ROOT, "mb_base")
    mlm.model.save_pretrained(db)
    fix_legacy_config(db)
    shutil.copy(os.path.join(ROOT, "tok_bytelevel", "tokenizer.json"), db)
    base, out = write_ref(ModernBertModel, db, ids, mask, None)
    # embed reference: mean and cls pooling of last_hidden_state over real tokens, L2-normalised
    last = out.last_hidden_state.numpy()
    mean = (last * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    cls = last[:, 0]
    np.save(os.path.join(db, "ref", "embed_mean.npy"), mean.astype(np.float32))
    cls_norm = cls / np.linalg.norm(cls, axis=1, keepdims=True)
    np.save(os.path.join(db, "ref", "embed_cls_norm.npy"), cls_norm.astype(np.float32))
    for name, v in (("embed_mean", mean), ("embed_cls_norm", cls_norm)):  # for the shell test
        with open(os.path.join(db, "ref", name + ".txt"), "w") as f:
            f.write("\n".join("%.8g" % x for x in v.reshape(-1)) + "\n")
    with open(os.path.join(db, "ref", "texts.txt"), "w") as f:
        f.write("\n".join(texts) + "\n")

    # The same encoder stored in bf16 (as real checkpoints often are); reference in fp32 math.
    dbf = os.path.join(ROOT, "mb_bf16")
    mlm.model.to(torch.bfloat16).save_pretrained(dbf)
    fix_legacy_config(dbf)
    write_ref(ModernBertModel, dbf, ids, mask, None)

    # mmBERT-shaped: sp tokenizer, v5 rope_parameters, equal thetas, classifier, mean pooling.
    V = ts.get_vocab_size()
    cfg = ModernBertConfig(vocab_size=V, hidden_size=64, intermediate_size=80, num_hidden_layers=5,
                           num_attention_heads=2, local_attention=16, max_position_embeddings=512,
                           pad_token_id=0, cls_token_id=1, sep_token_id=1, bos_token_id=2,
                           eos_token_id=1, initializer_range=0.2, classifier_pooling="mean",
                           num_labels=3, id2label={0: "negative", 1: "neutral", 2: "positive"},
                           label2id={"negative": 0, "neutral": 1, "positive": 2},
                           rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                                            "sliding_attention": {"rope_type": "default",
                                                                  "rope_theta": 160000.0}})
    m = ModernBertForSequenceClassification(cfg).eval()
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "norm" in n or "bias" in n:
                p.add_(torch.randn_like(p) * 0.2)
    d = os.path.join(ROOT, "mm_cls")
    m.save_pretrained(d)
    shutil.copy(os.path.join(ROOT, "tok_spbpe", "tokenizer.json"), d)
    texts = ["An encoder turns text into vectors for search and classification, 日本語 too.",
             "Café résumé", "the theory of everything is there in the thesis and more words here"]
    ids, mask = pad_batch(ts, texts)
    cl, out = write_ref(ModernBertForSequenceClassification, d, ids, mask, "cls")
    ids_l, mask_l = pad_batch(ts, texts + ["Numbers 98765 and café words: el niño está aquí, "
                                           "東京 is big, theses of theory."])
    write_ref(ModernBertForSequenceClassification, d, ids_l, mask_l, "cls", "ref_long")
    probs = torch.softmax(out.logits, -1).numpy()
    json.dump({"texts": texts, "probs": probs.tolist()},
              open(os.path.join(d, "ref", "classify.json"), "w"), indent=1)
    with open(os.path.join(d, "ref", "texts.txt"), "w") as f:
        f.write("\n".join(texts) + "\n")
    make_hd48()


if __name__ == "__main__":
    main()
