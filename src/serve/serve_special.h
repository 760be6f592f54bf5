/* Special-token text in chat messages. The chat template pastes message
 * content into the prompt, and the tokenizer turns "<|im_end|>" written
 * there into the special token itself (as HF does), so text from a user,
 * or a tool result carrying a fetched page, can close its turn and forge
 * a system or assistant turn. `serve --special-in-content` chooses:
 * "refuse" (the default) answers 400 naming the message and the token;
 * "parse" keeps HF's behaviour. */
#ifndef NC_SERVE_SPECIAL_H
#define NC_SERVE_SPECIAL_H

#include <stddef.h>

#include "base/error.h"
#include "text/tokenizer.h"

typedef struct serve_special serve_special;

/* The texts of t's added tokens flagged "special" (<|im_end|>, ...). */
nc_status serve_special_new(const tok_tokenizer *t, serve_special **out, nc_error *err);
void serve_special_free(serve_special *s);

/* The first special token's text found in text[0..len) (not
 * NUL-terminated: *tok_len bytes), or NULL. */
const char *serve_special_find(const serve_special *s, const char *text, size_t len,
                               size_t *tok_len);

#endif
