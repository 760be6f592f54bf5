/* Log-softmax at a few entries (see logprobs.h), in double. */
#include "gen/logprobs.h"

#include <math.h>

int gen_logprobs(const float *l, int nv, int32_t chosen, int k, double *chosen_lp, int32_t *top,
                 double *top_lp) {
    if (k > GEN_MAX_TOP_LOGPROBS) k = GEN_MAX_TOP_LOGPROBS;
    double mx = l[0];
    for (int v = 1; v < nv; v++)
        mx = l[v] > mx ? l[v] : mx;
    double sum = 0;
    for (int v = 0; v < nv; v++)
        sum += exp((double)l[v] - mx);
    double lse = mx + log(sum > 0 ? sum : 1.0); /* sum >= 1: the max term is exp(0) */
    int n_top = 0;
    for (int v = 0; v < nv && k > 0; v++) {
        if (n_top == k && l[v] <= l[top[n_top - 1]]) continue;
        int at = n_top < k ? n_top++ : k - 1;
        while (at > 0 && l[top[at - 1]] < l[v]) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = v;
    }
    *chosen_lp = (double)l[chosen] - lse;
    for (int i = 0; i < n_top; i++)
        top_lp[i] = (double)l[top[i]] - lse;
    return n_top;
}
