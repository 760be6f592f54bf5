/* The generation pipeline of one sequence: fit the prompt to the context
 * (or fail before any work), reuse the longest cached prefix the engine
 * keeps, feed the rest, then per token sample -> end-of-sequence check ->
 * detokenize -> reasoning split -> stop strings -> limits, until something
 * ends it with a finish reason. A gen_seq owns its engine sequence, sampler,
 * detokenizer, stop filter and split, and keeps no global state; it does
 * not run the engine itself: the caller asks it for its next step item,
 * runs an engine step, and hands the result back. So `nectar run` drives
 * one (gen_generate), and the server's scheduler drives N in one batched
 * step each. Consecutive requests on a sequence reuse the prefix they share
 * (chat turns, server slots). */
#ifndef NC_GEN_GENERATE_H
#define NC_GEN_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gen/model.h"
#include "gen/sampler.h"
#include "gen/think.h"

typedef struct gen_request {
    gen_sampler_params sampling;
    int max_new_tokens;       /* < 0: until the context is full */
    const char *const *stops; /* stop strings (not emitted), n_stops of them */
    int n_stops;
    int truncate;            /* 1: a prompt too long for the context loses its oldest tokens */
    int split_reasoning;     /* route <think>...</think> to GEN_TEXT_REASONING (think.h) */
    int starts_in_reasoning; /* the prompt already opened <think> */
    const struct gen_constraint *constraint; /* NULL, or constrained output from the start */
} gen_request;

typedef enum gen_finish {
    GEN_FINISH_NONE,    /* still running */
    GEN_FINISH_EOS,     /* an end-of-sequence token (not emitted) */
    GEN_FINISH_STOP,    /* a stop string */
    GEN_FINISH_LENGTH,  /* max_new_tokens reached */
    GEN_FINISH_CONTEXT, /* the KV cache is full */
    GEN_FINISH_CANCEL,  /* a callback or the caller asked to stop */
    GEN_FINISH_ERROR    /* the engine failed (gen_seq_error) */
} gen_finish;

const char *gen_finish_name(gen_finish f); /* "eos", "stop", ... */

typedef struct gen_result {
    gen_finish finish;
    int n_prompt;        /* prompt tokens used (after truncation) */
    int n_prompt_cached; /* of those, reused from the cache (not recomputed) */
    int n_truncated;     /* prompt tokens dropped by truncation */
    int n_generated;     /* tokens sampled, the final eos included */
    double prompt_s;     /* from the start to the first sampled token */
    double gen_s;        /* from the first sampled token to the end */
    /* speculative decoding: tokens the draft proposed, of those the ones
     * kept, and the verification steps */
    int n_drafted, n_accepted, n_draft_steps;
} gen_result;

/* What a sequence reports as it runs; either callback may be NULL and
 * returns non-zero to cancel. on_token: each sampled token other than an
 * end-of-sequence, with the logits row it was drawn from, before its text.
 * on_text: text that became final (an incomplete UTF-8 character or a
 * possible stop-string start is held back), content or reasoning. */
typedef struct gen_callbacks {
    int (*on_token)(void *user, int32_t token, const float *logits);
    gen_text_fn on_text;
    void *user;
} gen_callbacks;

typedef struct gen_seq gen_seq;

/* A sequence of up to ctx tokens (<= 0 or above the engine's: the
 * engine's) on model m (borrowed). */
nc_status gen_seq_new(const gen_model *m, int ctx, gen_seq **out, nc_error *err);
void gen_seq_free(gen_seq *s);
int gen_seq_ctx(const gen_seq *s);

/* Empties the cache (the next request recomputes its whole prompt). */
void gen_seq_reset(gen_seq *s);

/* Prompt tokens a request would reuse from this sequence's cache. */
int gen_seq_cached_prefix(const gen_seq *s, const int32_t *prompt, int n);

/* Starts a request (prompt copied). Errors (empty prompt, prompt +
 * max_new_tokens beyond the context without truncation, bad sampling
 * parameters or stop strings) come before any work. */
nc_status gen_seq_start(gen_seq *s, const int32_t *prompt, int n, const gen_request *req,
                        const gen_callbacks *cb, nc_error *err);

/* The sequence's share of the next engine step: the rest of its prompt (at
 * most max_prompt_chunk tokens; <= 0: all) or its last sampled token, and
 * the logits row to fill. Returns 0 when it has finished (nothing to run). */
int gen_seq_next_item(gen_seq *s, int max_prompt_chunk, engine_step_item *it);

/* Hands back the item after the step. Returns 1 when the request has
 * finished (gen_seq_result says how), 0 when it wants another step. */
int gen_seq_after_step(gen_seq *s, const engine_step_item *it);

/* Ends a running request now (finish CANCEL; held-back text dropped). */
void gen_seq_cancel(gen_seq *s);

/* Constrained output for the request just started (the server's
 * response_format and forced tool calls; gen_seq_start sets
 * req->constraint, or clears it): mask
 * sets entries of each logits row to -INFINITY before sampling; accept
 * learns each sampled token, end of sequence included. */
typedef struct gen_constraint {
    void (*mask)(void *user, float *logits);
    void (*accept)(void *user, int32_t token);
    void *user;
} gen_constraint;
void gen_seq_constrain(gen_seq *s, const gen_constraint *c);

gen_finish gen_seq_finish(const gen_seq *s);
const gen_result *gen_seq_result(const gen_seq *s);
/* The failure behind GEN_FINISH_ERROR (an engine or out-of-memory error). */
const nc_error *gen_seq_error(const gen_seq *s);

/* One request to the end, one engine step per token (`nectar run`, `chat`).
 * res is filled on success; an engine failure is returned as an error. */
nc_status gen_generate(gen_seq *s, const int32_t *prompt, int n, const gen_request *req,
                       const gen_callbacks *cb, gen_result *res, nc_error *err);

#endif
