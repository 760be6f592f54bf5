/* Softmax and top-k of a row of encoder logits (modernbert_rank.h). */
#include "models/modernbert_rank.h"

#include <math.h>

void modernbert_softmax(const float *logits, int n, float *p) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += exp((double)logits[i] - mx);
    for (int i = 0; i < n; i++)
        p[i] = (float)(exp((double)logits[i] - mx) / sum);
}

void modernbert_top_k(const float *p, int n, int k, int32_t *ids, float *probs) {
    int have = 0;
    /* indices ascend, so an entry equal to a kept one never displaces it */
    for (int i = 0; i < n; i++) {
        if (have == k && !(p[i] > probs[k - 1])) continue;
        int at = have < k ? have++ : k - 1;
        while (at > 0 && p[i] > probs[at - 1]) {
            probs[at] = probs[at - 1];
            ids[at] = ids[at - 1];
            at--;
        }
        probs[at] = p[i];
        ids[at] = i;
    }
}
