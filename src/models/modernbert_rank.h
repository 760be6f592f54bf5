/* What fill-mask and classification report from a row of logits, as HF's
 * pipelines do: the softmax (in double), and the k most probable entries,
 * ties to the lower index. The one copy for the public API (nc_fill_mask,
 * nc_classify) and the command line (`nectar fill-mask`, `classify`). */
#ifndef NC_MODELS_MODERNBERT_RANK_H
#define NC_MODELS_MODERNBERT_RANK_H

#include <stdint.h>

/* p[i] = exp(logits[i] - max) / sum_j exp(logits[j] - max), n >= 1. */
void modernbert_softmax(const float *logits, int n, float *p);

/* The k largest of p[n] (1 <= k <= n), most probable first, into ids[k] and
 * probs[k]. O(n k) at worst, O(n) when few entries beat the k-th. */
void modernbert_top_k(const float *p, int n, int k, int32_t *ids, float *probs);

#endif
