/* The tokenizer: Hugging Face tokenizer.json byte-level BPE (Qwen2/Qwen3,
 * GPT-2 style), loaded once and then read-only (safe to share between
 * threads). Pipeline: added tokens split out -> normaliser (NFC) -> split
 * regex (PCRE2) -> byte-to-unicode -> BPE merges by rank -> ids. See
 * docs/tokenizer.md for what is implemented and what is rejected. */
#ifndef NC_TEXT_TOKENIZER_H
#define NC_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct tok_tokenizer tok_tokenizer;

/* path: a model folder containing tokenizer.json (tokenizer_config.json is
 * optional and only used for the chat template elsewhere), or the
 * tokenizer.json file itself. */
nc_status tok_load(const char *path, tok_tokenizer **out, nc_error *err);

/* Builds a tokenizer from a tokenizer.json document held in memory; `what`
 * names it in error messages (a path, "fuzz input"). */
nc_status tok_load_from_memory(const char *json, size_t len, const char *what, tok_tokenizer **out,
                               nc_error *err);

void tok_free(tok_tokenizer *t);

/* Max id + 1, added tokens included (151669 for Qwen3; the model's embedding
 * matrix may have more rows than this). */
int32_t tok_vocab_size(const tok_tokenizer *t);

/* UTF-8 text -> ids. Added/special tokens written literally in the text are
 * split out first (as HF does). Adds no BOS/EOS. *ids is malloc'ed (possibly
 * NULL when *n_ids is 0), the caller frees it. Text that is not valid UTF-8
 * is rejected (NC_ERR_INVALID, naming the byte offset): HF cannot take it
 * either. NUL bytes are ordinary characters. */
nc_status tok_encode(const tok_tokenizer *t, const char *text, size_t len, int32_t **ids,
                     size_t *n_ids, nc_error *err);

/* tok_encode, then the special tokens of tokenizer.json's post_processor
 * (TemplateProcessing "[CLS] $A [SEP]", "<bos> $A <eos>"), as HF's
 * encode(text, add_special_tokens=True) for a single sequence. */
nc_status tok_encode_special(const tok_tokenizer *t, const char *text, size_t len, int32_t **ids,
                             size_t *n_ids, nc_error *err);

/* The raw bytes one token stands for (byte-level decoded; an added token
 * gives its literal text). Not NUL-terminated; valid while t lives. NULL
 * for an id that names no token. */
const char *tok_token_bytes(const tok_tokenizer *t, int32_t id, size_t *len);

/* Length in bytes of the longest token (sizes streaming buffers). */
size_t tok_max_token_bytes(const tok_tokenizer *t);

/* Id of a token by its text: an added token's content ("<|im_end|>",
 * "<think>") or a vocabulary entry as tokenizer.json spells it ("Ġthe").
 * -1 when there is none. */
int32_t tok_find(const tok_tokenizer *t, const char *token_text);

/* 1 when id is an added token flagged "special" (skipped by skip_special). */
int tok_is_special(const tok_tokenizer *t, int32_t id);

/* ids -> text (malloc'ed, NUL-terminated, *len excludes the NUL; len may be
 * NULL). skip_special drops special tokens. Byte sequences that are not
 * valid UTF-8 become U+FFFD, and ids that name no token are skipped, both
 * exactly as HF's decode does. */
nc_status tok_decode(const tok_tokenizer *t, const int32_t *ids, size_t n, int skip_special,
                     char **out, size_t *len, nc_error *err);

#endif
