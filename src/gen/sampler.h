/* Picks the next token from a row of logits. Order of the filters (the same
 * as HF transformers' LogitsProcessor chain, see docs/generation.md):
 *   penalties (repetition, then presence/frequency) -> temperature -> top-k
 *   -> top-p -> min-p -> draw.
 * temperature <= 0 (or top_k == 1) is greedy: the argmax after penalties.
 * Ties always go to the lower token id, so results never depend on sort
 * stability. The sampler owns every buffer it needs: sampling a token
 * allocates nothing. One sampler per sequence; it is not shared. */
#ifndef NC_GEN_SAMPLER_H
#define NC_GEN_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct gen_sampler_params {
    float temperature;       /* <= 0: greedy */
    int top_k;               /* <= 0: off */
    float top_p;             /* >= 1: off */
    float min_p;             /* <= 0: off */
    float repeat_penalty;    /* 1: off (HF/llama.cpp: logit>0 divided, <0 multiplied) */
    float presence_penalty;  /* 0: off (OpenAI: minus once per token seen) */
    float frequency_penalty; /* 0: off (OpenAI: minus count times per token seen) */
    uint64_t seed;
} gen_sampler_params;

/* Off everywhere: plain greedy decoding. */
gen_sampler_params gen_sampler_defaults_greedy(void);

typedef struct gen_sampler gen_sampler;

/* Checks the parameters (finite, in range) and allocates the buffers for
 * n_vocab tokens. */
nc_status gen_sampler_new(int n_vocab, const gen_sampler_params *p, gen_sampler **out,
                          nc_error *err);
void gen_sampler_free(gen_sampler *s);

/* Validates parameters alone (the CLI and the server use it on user input). */
nc_status gen_sampler_check_params(const gen_sampler_params *p, nc_error *err);

/* New parameters, reseeds the generator and forgets the token history. */
nc_status gen_sampler_reset(gen_sampler *s, const gen_sampler_params *p, nc_error *err);

/* Adds a token to the history the penalties look at (prompt and generated
 * tokens alike, as HF's repetition penalty does). Ids out of range are
 * ignored. */
void gen_sampler_accept(gen_sampler *s, int32_t id);

/* The next token for this row of n_vocab logits (not modified). */
int32_t gen_sampler_sample(gen_sampler *s, const float *logits);

/* The distribution the draw is made from, written to probs[n_vocab] (zeros
 * for filtered tokens; one-hot for greedy). For tests and logprobs. */
void gen_sampler_probs(gen_sampler *s, const float *logits, float *probs);

#endif
