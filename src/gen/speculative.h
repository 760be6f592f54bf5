/* Speculative decoding: a small draft model proposes up to draft_max tokens
 * one at a time; the target checks them all in ONE forward over the
 * proposed tokens (the engine's logits_all: a row after each), and keeps
 * the longest prefix it agrees with plus one token of its own. Greedy: a
 * draft token is kept when it is the target's argmax, so the output is the
 * target's greedy output token for token. Sampling: the standard rejection
 * rule (Leviathan et al. 2023, Chen et al. 2023): keep draft token d drawn
 * from q with probability min(1, p(d)/q(d)), else draw from
 * norm(max(0, p - q)); the output is distributed as the target's p.
 *
 * The draft and the target share one tokenizer (checked when the draft is
 * attached). A gen_model carries the draft (gen_spec_attach); each gen_seq
 * on it gets a gen_spec holding the draft's sequence, which it keeps in
 * step with the target's tokens by prefix reuse, the way gen_seq keeps its
 * own cache. generate.c drives it: the proposal before a step, the
 * verification after it (docs/speculative.md). */
#ifndef NC_GEN_SPECULATIVE_H
#define NC_GEN_SPECULATIVE_H

#include <stdint.h>

#include "base/error.h"
#include "engine/engine.h"
#include "gen/rng.h"
#include "gen/sampler.h"

struct gen_model;

typedef struct gen_spec_options {
    int draft_max; /* tokens proposed per step at most (llama.cpp --draft-max) */
    int draft_min; /* fewer proposed: a plain step instead (--draft-min) */
    float p_min;   /* stop proposing when the draft's top probability is below (--draft-p-min) */
} gen_spec_options;

#define GEN_SPEC_DRAFT_MAX 6 /* default --draft-max (llama.cpp: 16; docs/speculative.md) */
#define GEN_SPEC_DRAFT_CAP 64 /* the largest --draft-max */

/* Checks o (one line naming the field). */
nc_status gen_spec_check_options(const gen_spec_options *o, nc_error *err);

/* Opens dir on backend as target's draft (the target's engine options eo;
 * a bundle keeps the context it was compiled for), checks
 * that both share the tokenizer and the logits' length, and attaches it:
 * sequences made from now on speculate. gen_model_close closes it. */
nc_status gen_spec_attach(struct gen_model *target, const char *backend, const char *dir,
                          const engine_options *eo, const gen_spec_options *o, nc_error *err);

/* The tokenizer check alone: same tokens, same bytes, same special ids. */
nc_status gen_spec_check_pair(const struct gen_model *target, const struct gen_model *draft,
                              nc_error *err);

/* The rejection rule for one position: draft token d was drawn from q; p is
 * the target's distribution (both n long, each summing to 1). Returns d
 * (*accepted = 1) with probability min(1, p(d)/q(d)), else a token drawn
 * from norm(max(0, p - q)) (*accepted = 0). */
int32_t gen_spec_accept(const float *p, const float *q, int n, int32_t d, gen_rng *rng,
                        int *accepted);

/* ---- per sequence (generate.c) ------------------------------------------ */

typedef struct gen_spec gen_spec;

nc_status gen_spec_new(const struct gen_model *target, int ctx, gen_spec **out, nc_error *err);
void gen_spec_free(gen_spec *sp);

/* A new request with these sampling parameters. */
void gen_spec_start(gen_spec *sp, const gen_sampler_params *p);
/* The draft's cache emptied (gen_seq_reset). */
void gen_spec_reset(gen_spec *sp);

/* Proposes up to max_k tokens after hist[0..n_hist) (the target's cache
 * and its next token). Returns k, the tokens proposed (0: a plain step);
 * gen_spec_tokens then holds hist's last token and the k proposals: the
 * target's verification item. A draft failure stops speculation for the
 * request (logged) and returns 0. */
int gen_spec_propose(gen_spec *sp, const int32_t *hist, int n_hist, int max_k);
const int32_t *gen_spec_tokens(const gen_spec *sp);
/* (draft_max + 1) * n_vocab floats for the verification's logits rows. */
float *gen_spec_logits(gen_spec *sp);

/* The output token at position i of a verification (i < k: the proposal
 * tokens[i + 1] kept, or the target's own choice instead) from the target's
 * row there; target samples (its history and penalties, greedy or not).
 * *accepted says whether it was the proposal. */
int32_t gen_spec_choose(gen_spec *sp, gen_sampler *target, const float *row, int i, int *accepted);

#endif
