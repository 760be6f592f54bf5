/* Log-probabilities of a sampled token and its most likely alternatives,
 * from the logits row it was drawn from (softmax of the raw logits, before
 * any sampling filter; a constrained row's refused tokens are -inf): the
 * numbers of OpenAI's "logprobs", for the server and the API alike. */
#ifndef NC_GEN_LOGPROBS_H
#define NC_GEN_LOGPROBS_H

#include <stdint.h>

#define GEN_MAX_TOP_LOGPROBS 20

/* *chosen_lp = log p(chosen); top[0..ret) the min(k, GEN_MAX_TOP_LOGPROBS)
 * most likely ids, most likely first, with their log-probabilities. */
int gen_logprobs(const float *logits, int n_vocab, int32_t chosen, int k, double *chosen_lp,
                 int32_t *top, double *top_lp);

#endif
