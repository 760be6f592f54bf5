/* Pre-tokenization: cutting normalised text into the pieces BPE runs on,
 * as HF's pre_tokenizer steps do. Supported steps: Split (a regex or a
 * literal string, any behaviour, invert) and ByteLevel (add_prefix_space;
 * use_regex adds GPT-2's split); Sequence chains them. Regexes run on
 * PCRE2 with Unicode properties, JIT-compiled when available. */
#ifndef NC_TEXT_PRETOK_H
#define NC_TEXT_PRETOK_H

#include <stddef.h>

#include "base/json.h"

typedef struct tok_pretok tok_pretok;

/* Builds the pipeline from tokenizer.json's "pre_tokenizer" (NULL or JSON
 * null: the whole text is one piece). `what` names the file in messages. */
nc_status tok_pretok_new(const json_t *spec, const char *what, tok_pretok **out, nc_error *err);
void tok_pretok_free(tok_pretok *p);

/* Called once per non-empty piece, in order. Returning non-OK stops the run. */
typedef nc_status (*tok_piece_fn)(void *ctx, const char *piece, size_t len, nc_error *err);

/* Cuts text (valid UTF-8) into pieces. Safe to call from several threads at
 * once on the same pipeline. */
nc_status tok_pretok_run(const tok_pretok *p, const char *text, size_t len, tok_piece_fn fn,
                         void *ctx, nc_error *err);

#endif
