/* Constrained sampling over a tokenizer's vocabulary: which tokens can
 * continue the output a JSON matcher (json_match.h) has accepted so far.
 * The vocabulary is kept sorted by its bytes with the common prefix of
 * neighbours, so one pass walks it like a trie: a shared prefix is fed to
 * the matcher once, and a rejected byte rules out every token that shares
 * it without looking at them again. */
#ifndef NC_GEN_TOKEN_MASK_H
#define NC_GEN_TOKEN_MASK_H

#include <stdint.h>

#include "gen/json_match.h"
#include "text/tokenizer.h"

typedef struct tm_vocab tm_vocab;

/* n_vocab: the length of a logits row (ids past the tokenizer are never
 * allowed); eog: the end-of-generation ids, allowed where the output may
 * end. Special tokens other than these, and <think> / </think>, are never
 * allowed. */
nc_status tm_vocab_new(const tok_tokenizer *t, int n_vocab, const int32_t *eog, int n_eog,
                       tm_vocab **out, nc_error *err);
void tm_vocab_free(tm_vocab *v);

/* The length of a logits row it masks. */
int tm_vocab_n(const tm_vocab *v);

/* Sets logits[id] = -INFINITY for every token that cannot come next;
 * returns how many can. 0: the output is stuck (nesting past the
 * matcher's depth); then only the end-of-generation ids are left. */
int tm_mask(const tm_vocab *v, const jm_grammar *gr, const jm_state *s, float *logits);

/* Advances s over token id; returns 1 when the matcher took it, 0 when the
 * token is not allowed from s (s unchanged). An end-of-generation id is
 * taken where the output may end. */
int tm_accept(const tm_vocab *v, const jm_grammar *gr, jm_state *s, int32_t id);

#endif
