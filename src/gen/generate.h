/* The generation loop: prompt ids -> batched forward -> sample -> stream
 * text, until an end-of-sequence token, a stop string, the token limit or a
 * full context. A gen_session is one sequence (its engine state, sampler,
 * detokenizer buffers and the ids now in its KV cache); it keeps no global
 * state, so a server can run several sessions side by side. Consecutive
 * requests on a session reuse the cached prefix they share (chat turns). */
#ifndef NC_GEN_GENERATE_H
#define NC_GEN_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gen/engine.h"
#include "gen/sampler.h"
#include "text/tokenizer.h"

typedef struct gen_request {
    gen_sampler_params sampling;
    int max_new_tokens;       /* < 0: until the context is full */
    const char *const *stops; /* stop strings (not emitted), n_stops of them */
    int n_stops;
    int truncate; /* 1: a prompt too long for the context loses its oldest tokens */
} gen_request;

typedef enum gen_finish {
    GEN_FINISH_EOS,     /* an end-of-sequence token (not emitted) */
    GEN_FINISH_STOP,    /* a stop string */
    GEN_FINISH_LENGTH,  /* max_new_tokens reached */
    GEN_FINISH_CONTEXT, /* the KV cache is full */
    GEN_FINISH_CANCEL   /* the callback asked to stop */
} gen_finish;

const char *gen_finish_name(gen_finish f); /* "eos", "stop", ... */

typedef struct gen_result {
    gen_finish finish;
    int n_prompt;        /* prompt tokens used (after truncation) */
    int n_prompt_cached; /* of those, reused from the cache (not recomputed) */
    int n_truncated;     /* prompt tokens dropped by truncation */
    int n_generated;     /* tokens sampled, the final eos included */
    double prompt_s;     /* forward pass over the uncached prompt tokens */
    double gen_s;        /* from the end of the prompt to the end */
} gen_result;

/* Called for each sampled token with the text that became final (may be
 * empty: an incomplete UTF-8 character or a possible stop-string start is
 * held back), and once more at the end with token -1 for held-back text.
 * Return non-zero to cancel. */
typedef int (*gen_on_piece)(void *user, int32_t token, const char *text, size_t len);

typedef struct gen_session gen_session;

/* The engine (its model and state borrowed), the tokenizer (borrowed). The
 * end-of-sequence ids are the engine's plus <|im_end|> and <|endoftext|>
 * where the vocabulary has them. */
nc_status gen_session_new(const gen_engine *engine, const tok_tokenizer *tok, gen_session **out,
                          nc_error *err);
void gen_session_free(gen_session *s);

/* Empties the KV cache (the next request recomputes its whole prompt). */
void gen_session_reset(gen_session *s);

/* 1 when id ends a sequence. */
int gen_session_is_eos(const gen_session *s, int32_t id);

/* Runs one request. Errors (empty prompt, prompt + max_new_tokens beyond the
 * context without truncation, a failing forward pass) come before any
 * output where they can; res is filled on success. */
nc_status gen_generate(gen_session *s, const int32_t *prompt, int n_prompt, const gen_request *req,
                       gen_on_piece on_piece, void *user, gen_result *res, nc_error *err);

#endif
