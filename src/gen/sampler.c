/* The sampler: penalties over the token history, then temperature, top-k,
 * top-p and min-p on the candidate set, then one draw from xoshiro256**.
 * Sorting is lazy: a binary heap over the candidates yields them best-first,
 * so top-k and top-p cost O(V + kept * log V) instead of a full sort of a
 * 150k-entry vocabulary every token. */
#include "gen/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen/rng.h"
#include "gen/sampling_params.h"

struct gen_sampler {
    int n_vocab;
    gen_sampler_params p;
    gen_rng rng;
    float *work;     /* [n_vocab] logits after penalties and temperature */
    int32_t *counts; /* [n_vocab] occurrences of each token in the history */
    int32_t *seen;   /* [n_vocab] distinct ids in the history, n_seen of them */
    int n_seen;
    int32_t *heap; /* [n_vocab] scratch for the best-first heap */
    int32_t *cand; /* [n_vocab] the candidate set, best-first when sorted */
    double *cprob; /* [n_vocab] probability of cand[i] */
    double *mass;  /* [n_vocab] exp(logit - max) by token id, for top-p */
};

gen_sampler_params gen_sampler_defaults_greedy(void) {
    gen_sampler_params p = {0};
    for (int i = 0; gen_param_at(i); i++) /* every parameter off */
        gen_param_put(&p, gen_param_at(i), gen_param_at(i)->off);
    return p;
}

nc_status gen_sampler_check_params(const gen_sampler_params *p, nc_error *err) {
    if (!isfinite(p->temperature))
        return nc_fail(err, NC_ERR_INVALID, "sampling: temperature must be finite");
    if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
        return nc_fail(err, NC_ERR_INVALID, "sampling: top_p %g is outside [0, 1]",
                       (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return nc_fail(err, NC_ERR_INVALID, "sampling: min_p %g is outside [0, 1]",
                       (double)p->min_p);
    if (!(p->repeat_penalty > 0.0f) || !isfinite(p->repeat_penalty))
        return nc_fail(err, NC_ERR_INVALID, "sampling: repeat_penalty %g must be > 0",
                       (double)p->repeat_penalty);
    if (!isfinite(p->presence_penalty) || !isfinite(p->frequency_penalty))
        return nc_fail(err, NC_ERR_INVALID, "sampling: presence/frequency penalty must be finite");
    return NC_OK;
}

void gen_sampler_free(gen_sampler *s) {
    if (!s) return;
    free(s->work);
    free(s->counts);
    free(s->seen);
    free(s->heap);
    free(s->cand);
    free(s->cprob);
    free(s->mass);
    free(s);
}

nc_status gen_sampler_new(int n_vocab, const gen_sampler_params *p, gen_sampler **out,
                          nc_error *err) {
    *out = NULL;
    if (n_vocab <= 0) return nc_fail(err, NC_ERR_INVALID, "sampler: vocabulary size %d", n_vocab);
    NC_TRY(gen_sampler_check_params(p, err));
    gen_sampler *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "sampler: out of memory");
    size_t n = (size_t)n_vocab;
    s->n_vocab = n_vocab;
    s->work = malloc(n * sizeof *s->work);
    s->counts = calloc(n, sizeof *s->counts);
    s->seen = malloc(n * sizeof *s->seen);
    s->heap = malloc(n * sizeof *s->heap);
    s->cand = malloc(n * sizeof *s->cand);
    s->cprob = malloc(n * sizeof *s->cprob);
    s->mass = malloc(n * sizeof *s->mass);
    if (!s->work || !s->counts || !s->seen || !s->heap || !s->cand || !s->cprob || !s->mass) {
        gen_sampler_free(s);
        return nc_fail(err, NC_ERR_NOMEM, "sampler: out of memory for %d tokens", n_vocab);
    }
    s->p = *p;
    gen_rng_seed(&s->rng, p->seed);
    *out = s;
    return NC_OK;
}

nc_status gen_sampler_reset(gen_sampler *s, const gen_sampler_params *p, nc_error *err) {
    NC_TRY(gen_sampler_check_params(p, err));
    for (int i = 0; i < s->n_seen; i++)
        s->counts[s->seen[i]] = 0;
    s->n_seen = 0;
    s->p = *p;
    gen_rng_seed(&s->rng, p->seed);
    return NC_OK;
}

void gen_sampler_accept(gen_sampler *s, int32_t id) {
    if (id < 0 || id >= s->n_vocab) return;
    if (s->counts[id]++ == 0) s->seen[s->n_seen++] = id;
}

/* a ranks before b: higher logit, then lower id. */
static int ranks_before(const float *w, int32_t a, int32_t b) {
    return w[a] > w[b] || (w[a] == w[b] && a < b);
}

/* Binary heaps of token ids: best-at-root to pop candidates best-first, or
 * worst-at-root to hold the k best seen so far. */
static int goes_above(const float *w, int32_t a, int32_t b, int is_worst_root) {
    return is_worst_root ? ranks_before(w, b, a) : ranks_before(w, a, b);
}

static void sift_down(const float *w, int32_t *h, int n, int i, int is_worst_root) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, top = i;
        if (l < n && goes_above(w, h[l], h[top], is_worst_root)) top = l;
        if (r < n && goes_above(w, h[r], h[top], is_worst_root)) top = r;
        if (top == i) return;
        int32_t t = h[i];
        h[i] = h[top];
        h[top] = t;
        i = top;
    }
}

static void heap_build(const float *w, int32_t *h, int n, int is_worst_root) {
    for (int i = n / 2 - 1; i >= 0; i--)
        sift_down(w, h, n, i, is_worst_root);
}

/* Removes and returns the root of a best-at-root heap. */
static int32_t heap_pop(const float *w, int32_t *h, int *n) {
    int32_t top = h[0];
    h[0] = h[--*n];
    sift_down(w, h, *n, 0, 0);
    return top;
}

/* Penalties on the tokens seen, in place on s->work. */
static void apply_penalties(gen_sampler *s) {
    const gen_sampler_params *p = &s->p;
    int has_rep = p->repeat_penalty != 1.0f;
    int has_oai = p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f;
    if (!has_rep && !has_oai) return;
    for (int i = 0; i < s->n_seen; i++) {
        int32_t id = s->seen[i];
        float l = s->work[id];
        if (has_rep) l = l > 0.0f ? l / p->repeat_penalty : l * p->repeat_penalty;
        l -= (float)s->counts[id] * p->frequency_penalty + p->presence_penalty;
        s->work[id] = l;
    }
}

static int32_t argmax(const float *w, int n) {
    int32_t best = 0;
    float best_l = w[0];
    for (int32_t i = 1; i < n; i++)
        if (w[i] > best_l) { /* strict: ties keep the lower id */
            best_l = w[i];
            best = i;
        }
    return best;
}

/* The k best finite tokens, best-first, in one pass over the vocabulary
 * (each token costs one comparison against the current k-th best). */
static int select_top_k(const float *w, int n, int k, int32_t *heap, int32_t *out) {
    int hn = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(w[i] > -INFINITY)) continue;
        if (hn < k) {
            heap[hn++] = i;
            if (hn == k) heap_build(w, heap, hn, 1);
        } else if (ranks_before(w, i, heap[0])) {
            heap[0] = i;
            sift_down(w, heap, hn, 0, 1);
        }
    }
    if (hn < k) heap_build(w, heap, hn, 1);
    for (int m = hn; m > 0; m--) { /* pop the worst to the back */
        out[m - 1] = heap[0];
        heap[0] = heap[m - 1];
        sift_down(w, heap, m - 1, 0, 1);
    }
    return hn;
}

/* Top-p without top-k on a whole vocabulary: instead of ordering every
 * token, bucket the logits below the maximum and drop the buckets that lie
 * wholly below a set of better buckets already holding the nucleus mass
 * (with a margin for rounding). Exact: every dropped token ranks after
 * tokens whose mass reaches top_p, so HF's rule would drop it too. */
#define NUCLEUS_BUCKETS 512
#define NUCLEUS_RANGE 40.0 /* logits more than this below the max share the last bucket */
static int bucket_of(double maxl, float l) {
    double b = (maxl - (double)l) * (NUCLEUS_BUCKETS / NUCLEUS_RANGE);
    return b >= NUCLEUS_BUCKETS - 1 ? NUCLEUS_BUCKETS - 1 : (int)b;
}

static int drop_beyond_nucleus(gen_sampler *s, int n_cand, double maxl, double need) {
    double bucket_mass[NUCLEUS_BUCKETS] = {0};
    for (int i = 0; i < n_cand; i++)
        bucket_mass[bucket_of(maxl, s->work[s->cand[i]])] += s->mass[s->cand[i]];
    need *= 1.0 + 1e-9;
    double acc = 0.0;
    int last = 0;
    while (last < NUCLEUS_BUCKETS - 1 && acc + bucket_mass[last] < need)
        acc += bucket_mass[last++];
    if (last == NUCLEUS_BUCKETS - 1) return n_cand; /* nothing provably outside */
    int kept = 0;
    for (int i = 0; i < n_cand; i++)
        if (bucket_of(maxl, s->work[s->cand[i]]) <= last) s->cand[kept++] = s->cand[i];
    return kept;
}

/* Fills s->cand / s->cprob with the filtered, renormalised distribution and
 * returns the number of candidates, or -1 for greedy with *greedy_id set. */
static int prepare(gen_sampler *s, const float *logits, int32_t *greedy_id) {
    const gen_sampler_params *p = &s->p;
    int n = s->n_vocab;
    float *w = s->work;
    for (int i = 0; i < n; i++) {
        float x = logits[i];
        w[i] = x == x ? x : -INFINITY; /* NaN ranks last */
    }
    apply_penalties(s);
    if (p->temperature <= 0.0f || p->top_k == 1) {
        *greedy_id = argmax(w, n);
        return -1;
    }
    int n_cand = 0, is_sorted = 0;
    if (p->top_k > 0 && p->top_k < n) {
        n_cand = select_top_k(w, n, p->top_k, s->heap, s->cand);
        is_sorted = 1;
        /* temperature keeps the order, so it only needs the survivors */
        if (p->temperature != 1.0f)
            for (int i = 0; i < n_cand; i++)
                w[s->cand[i]] /= p->temperature;
    } else {
        if (p->temperature != 1.0f)
            for (int i = 0; i < n; i++)
                w[i] /= p->temperature;
        for (int32_t i = 0; i < n; i++)
            if (w[i] > -INFINITY) s->cand[n_cand++] = i;
    }
    if (n_cand == 0) {
        *greedy_id = 0;
        return -1;
    }
    if (p->top_p < 1.0f) {
        /* HF keeps a token while the mass of the tokens ranked before it is
         * below top_p; the first token is always kept. */
        double maxl = -INFINITY, sum = 0.0;
        for (int i = 0; i < n_cand; i++)
            if (w[s->cand[i]] > maxl) maxl = w[s->cand[i]];
        for (int i = 0; i < n_cand; i++) {
            int32_t id = s->cand[i];
            s->mass[id] = exp((double)w[id] - maxl);
            sum += s->mass[id];
        }
        double before = 0.0;
        int kept = 0;
        if (is_sorted) {
            while (kept < n_cand && (kept == 0 || before < p->top_p))
                before += s->mass[s->cand[kept++]] / sum;
        } else { /* best-first through a heap: only as many pops as kept */
            int hn = drop_beyond_nucleus(s, n_cand, maxl, p->top_p * sum);
            memcpy(s->heap, s->cand, (size_t)hn * sizeof *s->heap);
            heap_build(w, s->heap, hn, 0);
            while (hn > 0 && (kept == 0 || before < p->top_p)) {
                int32_t id = heap_pop(w, s->heap, &hn);
                s->cand[kept++] = id;
                before += s->mass[id] / sum;
            }
            is_sorted = 1;
        }
        n_cand = kept;
    }
    if (p->min_p > 0.0f) {
        /* p_i < min_p * p_max  <=>  l_i < l_max + log(min_p). */
        double maxl = -INFINITY;
        for (int i = 0; i < n_cand; i++)
            if (w[s->cand[i]] > maxl) maxl = w[s->cand[i]];
        double thr = maxl + log((double)p->min_p);
        int kept = 0;
        for (int i = 0; i < n_cand; i++)
            if ((double)w[s->cand[i]] >= thr) s->cand[kept++] = s->cand[i];
        n_cand = kept; /* the maximum always passes, so kept >= 1 */
    }
    double maxl = -INFINITY, sum = 0.0;
    for (int i = 0; i < n_cand; i++)
        if (w[s->cand[i]] > maxl) maxl = w[s->cand[i]];
    for (int i = 0; i < n_cand; i++) {
        s->cprob[i] = exp((double)w[s->cand[i]] - maxl);
        sum += s->cprob[i];
    }
    for (int i = 0; i < n_cand; i++)
        s->cprob[i] /= sum;
    return n_cand;
}

int32_t gen_sampler_sample(gen_sampler *s, const float *logits) {
    int32_t greedy_id = 0;
    int n_cand = prepare(s, logits, &greedy_id);
    if (n_cand < 0) return greedy_id;
    double u = gen_rng_uniform(&s->rng), cum = 0.0;
    for (int i = 0; i < n_cand; i++) {
        cum += s->cprob[i];
        if (u < cum) return s->cand[i];
    }
    return s->cand[n_cand - 1]; /* u within rounding of 1 */
}

void gen_sampler_probs(gen_sampler *s, const float *logits, float *probs) {
    int32_t greedy_id = 0;
    int n_cand = prepare(s, logits, &greedy_id);
    memset(probs, 0, (size_t)s->n_vocab * sizeof *probs);
    if (n_cand < 0) {
        probs[greedy_id] = 1.0f;
        return;
    }
    for (int i = 0; i < n_cand; i++)
        probs[s->cand[i]] = (float)s->cprob[i];
}
