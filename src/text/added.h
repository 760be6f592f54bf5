/* Added tokens (tokenizer.json "added_tokens"): matched as whole strings
 * before the model sees the text, leftmost-longest like HF's Aho-Corasick
 * matcher, with the single_word, lstrip and rstrip flags. Tokens with
 * normalized=false are matched on the raw text, the others on normalised
 * text (their content normalised the same way). */
#ifndef NC_TEXT_ADDED_H
#define NC_TEXT_ADDED_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct tok_added {
    char *content; /* as matched (normalised for normalized=true tokens) */
    size_t len;
    int32_t id;
    unsigned char special, single_word, lstrip, rstrip, normalized;
} tok_added;

/* A set of tokens to match, with an index by first byte. */
typedef struct tok_added_set {
    const tok_added **items; /* by first byte, longest first within a byte */
    uint32_t start[257];     /* items of first byte b: [start[b], start[b+1]) */
} tok_added_set;

/* Builds the matcher over the tokens whose normalized flag equals `normalized`. */
nc_status tok_added_set_build(tok_added_set *s, const tok_added *tokens, size_t n, int normalized,
                              nc_error *err);
void tok_added_set_free(tok_added_set *s);

/* Called for each stretch of text: a token (id >= 0) or plain text (id -1). */
typedef nc_status (*tok_segment_fn)(void *ctx, int32_t id, const char *s, size_t len,
                                    nc_error *err);

/* Cuts text into added tokens and the plain text between them. */
nc_status tok_added_split(const tok_added_set *s, const char *text, size_t len, tok_segment_fn fn,
                          void *ctx, nc_error *err);

#endif
