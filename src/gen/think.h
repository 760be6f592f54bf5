/* Splits a Qwen3 reply into reasoning and answer as it streams: text between
 * the <think> and </think> tokens is reasoning, the rest is content. The
 * tags are recognised by token id (the model emits them as single added
 * tokens) and belong to neither text. One whitespace rule, the same for
 * `nectar chat` and the server's reasoning_content, so streamed and whole
 * answers agree: reasoning loses its leading blanks, and its trailing blanks
 * are held until more reasoning follows (then released) or </think> comes
 * (then dropped); the blanks after </think> (the template's "\n\n") are
 * dropped. <think> opens reasoning only before any content. */
#ifndef NC_GEN_THINK_H
#define NC_GEN_THINK_H

#include <stddef.h>
#include <stdint.h>

#include "models/family.h"
#include "text/tokenizer.h"

typedef enum gen_text_kind {
    GEN_TEXT_CONTENT,  /* the answer */
    GEN_TEXT_REASONING /* inside <think>...</think> */
} gen_text_kind;

/* Receives text that can be shown now; returns non-zero to stop. */
typedef int (*gen_text_fn)(void *user, gen_text_kind kind, const char *text, size_t len);

typedef struct gen_think {
    int32_t open_id, close_id; /* -1 when the vocabulary has no such token */
    int state;
    int has_reasoning; /* reasoning text released (leading blanks are gone) */
    char *held;        /* trailing blanks of the reasoning so far */
    size_t n_held, cap_held;
} gen_think;

/* The tags are the model family's (family.h: think_open, think_close; a
 * family without them, or f NULL, never splits). starts_thinking: the
 * prompt already ends with the opening tag (templates that open the block
 * themselves), so the reply starts as reasoning. Keeps the held buffer of
 * an earlier use. */
void gen_think_init(gen_think *t, const tok_tokenizer *tok, const model_family_row *f,
                    int starts_thinking);
void gen_think_free(gen_think *t);

/* 1 when token is a tag that switches the split (its text is not shown):
 * <think> before any content, </think> inside reasoning. */
int gen_think_tag(gen_think *t, int32_t token);

/* 1 when token is the </think> that would end the reasoning now (the
 * caller flushes its detokenizer into the reasoning before the tag). */
int gen_think_closes(const gen_think *t, int32_t token);

/* Routes detokenized text through the rule to emit; returns what emit
 * returned (0 when nothing was emitted), or -1 when out of memory. */
int gen_think_text(gen_think *t, const char *text, size_t len, gen_text_fn emit, void *user);

#endif
