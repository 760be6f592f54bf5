/* Splits a Qwen3 reply into reasoning and answer as it streams: text between
 * the <think> and </think> tokens is reasoning, the rest is content. The
 * tags are recognised by token id (the model emits them as single added
 * tokens) and are not part of either text; the blank lines the template puts
 * after </think> are dropped. Used by `nectar chat` (dim or hide thinking)
 * and fit for a server's reasoning_content. */
#ifndef NC_GEN_THINK_H
#define NC_GEN_THINK_H

#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer.h"

typedef enum gen_text_kind {
    GEN_TEXT_NONE,      /* nothing to show (a tag, or only dropped newlines) */
    GEN_TEXT_CONTENT,   /* the answer */
    GEN_TEXT_REASONING, /* inside <think>...</think> */
} gen_text_kind;

typedef struct gen_think {
    int32_t open_id, close_id; /* -1 when the vocabulary has no such token */
    int is_thinking, is_after_close;
} gen_think;

/* starts_thinking: the prompt already ends with <think> (templates that open
 * the block themselves), so the reply starts as reasoning. */
void gen_think_init(gen_think *t, const tok_tokenizer *tok, int starts_thinking);

/* Classifies one piece of streamed text (token as given to the generation
 * callback, -1 for text released at the end); *text / *len may be narrowed. */
gen_text_kind gen_think_piece(gen_think *t, int32_t token, const char **text, size_t *len);

#endif
