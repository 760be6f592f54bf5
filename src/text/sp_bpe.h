/* SentencePiece-style BPE as HF tokenizers runs it for Gemma / mmBERT (and
 * Llama): the normalizer writes spaces as "▁" (Replace, optionally Prepend),
 * BPE starts from one symbol per character and, for a character missing from
 * the vocabulary, falls back to its UTF-8 bytes as <0xNN> tokens (byte_fallback)
 * or to <unk> (fused when fuse_unk); the decoder chain Replace("▁" -> " "),
 * ByteFallback, Fuse, Strip turns tokens back into text. The tokenizer object
 * (tokenizer.c) uses this instead of the byte-level steps when the BPE model
 * sets byte_fallback. */
#ifndef NC_TEXT_SP_BPE_H
#define NC_TEXT_SP_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "text/tokmap.h"

typedef struct tok_sp tok_sp;

/* Reads the "normalizer" and "decoder" of a tokenizer.json root. */
nc_status tok_sp_new(const json_t *root, const char *what, tok_sp **out, nc_error *err);
void tok_sp_free(tok_sp *s);

/* Finds the <0xNN> tokens in the vocabulary (call once the vocab is loaded). */
void tok_sp_bind_vocab(tok_sp *s, const tok_strmap *vocab);

/* The normalizer on text: *out is malloc'ed (caller frees). */
nc_status tok_sp_normalize(const tok_sp *s, const char *text, size_t len, char **out,
                           size_t *out_len, nc_error *err);

/* A word's initial BPE symbols: its characters' ids, byte tokens for
 * characters not in the vocabulary, else unk_id (runs fused when fuse_unk;
 * dropped when there is no unk). sym has room for len ids. */
size_t tok_sp_symbols(const tok_sp *s, const tok_strmap *vocab, int32_t unk_id, int fuse_unk,
                      const char *word, size_t len, int32_t *sym);

/* A vocabulary spelling to the bytes it stands for alone: <0xNN> -> the byte,
 * else the decoder's Replace applied ("▁" -> " "). out has room for len bytes. */
size_t tok_sp_spelling_to_bytes(const tok_sp *s, const char *spell, size_t len, char *out);

/* 1 when id is one of the <0xNN> byte tokens. */
int tok_sp_is_byte_token(const tok_sp *s, int32_t id, int32_t *byte);

/* HF's decoder chain over the tokens' bytes (from tok_sp_spelling_to_bytes):
 * runs of byte tokens become their text when valid UTF-8, else one U+FFFD
 * per byte (ByteFallback); then Fuse and Strip. text/lens: per token. */
nc_status tok_sp_decode(const tok_sp *s, const int32_t *ids, const char *const *text,
                        const size_t *lens, size_t n, char **out, size_t *out_len, nc_error *err);

#endif
