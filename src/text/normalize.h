/* Unicode normalisation of text before pre-tokenization, as HF's
 * "normalizer" does: NFC (Qwen2/Qwen3), NFD, NFKC, NFKD or a Sequence of
 * them, through utf8proc. Other normaliser types are rejected at load. */
#ifndef NC_TEXT_NORMALIZE_H
#define NC_TEXT_NORMALIZE_H

#include <stddef.h>

#include "base/json.h"

typedef struct tok_norm tok_norm;

/* From tokenizer.json's "normalizer" (NULL or JSON null: identity). */
nc_status tok_norm_new(const json_t *spec, const char *what, tok_norm **out, nc_error *err);
void tok_norm_free(tok_norm *n);

/* Normalises text (valid UTF-8). *out is either text itself (nothing to
 * change) or a malloc'ed buffer the caller frees when *out != text. */
nc_status tok_norm_apply(const tok_norm *n, const char *text, size_t len, char **out,
                         size_t *out_len, nc_error *err);

#endif
