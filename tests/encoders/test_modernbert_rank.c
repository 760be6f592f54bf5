/* modernbert_softmax and modernbert_top_k (the ranking nc_fill_mask,
 * nc_classify, `nectar fill-mask` and `classify` report) against references
 * computed here: the softmax in long double from its definition, and the
 * top-k by sorting every (probability, index) pair with qsort, probability
 * descending, index ascending. Rows with ties, -inf, one entry, k = n. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../test.h"
#include "models/modernbert_rank.h"

typedef struct {
    float p;
    int i;
} pair;

static int by_p_then_index(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}

static uint32_t rng = 12345;
static float next_logit(int ties) {
    rng = rng * 1664525u + 1013904223u;
    int r = (int)(rng >> 8) % 2000 - 1000;
    return ties ? (float)(r / 250) : (float)r / 97.0f; /* few distinct values when ties */
}

static void check_row(const float *logits, int n, int k) {
    float *p = malloc((size_t)n * sizeof *p), *probs = malloc((size_t)k * sizeof *probs);
    int32_t *ids = malloc((size_t)k * sizeof *ids);
    pair *ref = malloc((size_t)n * sizeof *ref);
    modernbert_softmax(logits, n, p);
    long double mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    for (int i = 0; i < n; i++)
        sum += expl(logits[i] - mx);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)(expl(logits[i] - mx) / sum) - p[i]);
        worst = d > worst ? d : worst;
        ref[i] = (pair){p[i], i};
    }
    CHECKF(worst < 1e-7, "softmax differs by %g (n %d)", worst, n);
    qsort(ref, (size_t)n, sizeof *ref, by_p_then_index);
    modernbert_top_k(p, n, k, ids, probs);
    int bad = -1;
    for (int j = 0; j < k && bad < 0; j++)
        if (ids[j] != ref[j].i || probs[j] != ref[j].p) bad = j;
    CHECKF(bad < 0, "n %d k %d: rank %d is %d, sorting gives %d", n, k, bad, ids[bad], ref[bad].i);
    free(p);
    free(probs);
    free(ids);
    free(ref);
}

static void test_random_rows_match_sorting(void) {
    static float row[5000];
    const int ns[] = {1, 2, 7, 100, 5000};
    for (int t = 0; t < 2; t++)
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++) {
            int n = ns[a];
            for (int i = 0; i < n; i++)
                row[i] = next_logit(t);
            const int ks[] = {1, 3, 5, 64, n};
            for (size_t b = 0; b < sizeof ks / sizeof *ks; b++)
                if (ks[b] <= n) check_row(row, n, ks[b]);
        }
}

static void test_ties_and_masked_entries(void) {
    /* equal logits rank by index; -inf entries get probability 0, last */
    const float row[] = {1, 3, -INFINITY, 3, 1, 3, -INFINITY};
    check_row(row, 7, 7);
    float p[7], probs[4];
    int32_t ids[4];
    modernbert_softmax(row, 7, p);
    modernbert_top_k(p, 7, 4, ids, probs);
    CHECK(ids[0] == 1 && ids[1] == 3 && ids[2] == 5 && ids[3] == 0);
    CHECK(p[2] == 0 && p[6] == 0);
}

int main(void) {
    RUN(test_random_rows_match_sorting);
    RUN(test_ties_and_masked_entries);
    return nc_test_exit_code();
}
