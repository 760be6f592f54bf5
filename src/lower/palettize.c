/* Per-group k-means palettization (palettize.h). A group's weights are fp16,
 * so it holds few distinct values: they are sorted once (radix sort of an
 * order-preserving key) and clustered as weighted 1-D points (weight = how
 * often the value occurs, which is exactly k-means over every weight).
 * In one dimension clusters are runs of the sorted values, so k-means++
 * seeding updates only the run between a new centre's neighbours and each
 * Lloyd step is a sweep with prefix sums: a 0.6B model palettizes in
 * seconds, not the hours a k x n distance matrix would take. */
#include "lower/palettize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LLOYD_STEPS LOWER_PALETTE_MAX_STEPS
#define BLOCK 64 /* k-means++ sampling: sums of D^2 weight per block */

int64_t lower_palette_group_rows(int64_t rows, int64_t group_size) {
    if (group_size <= 0 || group_size >= rows) return rows;
    int64_t g = group_size;
    while (rows % g)
        g--;
    return g;
}

/* fp16 bits to a key whose unsigned order is the values' order. */
static uint16_t order_key(nc_fp16 h) {
    return (uint16_t)(h & 0x8000 ? ~h : h | 0x8000);
}

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) {
    return (double)(splitmix64(s) >> 11) * 0x1p-53;
}

/* One group's scratch: sorted positions, its distinct values and counts. */
typedef struct group_work {
    size_t n, u;
    uint32_t *order, *tmp; /* positions sorted by value */
    uint16_t *keys;
    double *val, *cnt, *d2w, *blk, *p0, *p1;
    uint32_t *lut_of; /* distinct value -> table index */
    double c[256];
    int centre_of[256]; /* k-means++: distinct index of each centre, ascending */
} group_work;

static void radix_sort(group_work *g) {
    size_t hist[256];
    uint32_t *src = g->order, *dst = g->tmp;
    for (size_t i = 0; i < g->n; i++)
        src[i] = (uint32_t)i;
    for (int shift = 0; shift < 16; shift += 8) {
        memset(hist, 0, sizeof hist);
        for (size_t i = 0; i < g->n; i++)
            hist[(g->keys[src[i]] >> shift) & 255]++;
        size_t sum = 0;
        for (int b = 0; b < 256; b++) {
            size_t h = hist[b];
            hist[b] = sum;
            sum += h;
        }
        for (size_t i = 0; i < g->n; i++)
            dst[hist[(g->keys[src[i]] >> shift) & 255]++] = src[i];
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    /* two passes: the result is back in g->order */
}

static void block_sum(group_work *g, size_t b) {
    size_t lo = b * BLOCK, hi = lo + BLOCK < g->u ? lo + BLOCK : g->u;
    double s = 0;
    for (size_t i = lo; i < hi; i++)
        s += g->d2w[i];
    g->blk[b] = s;
}

/* Lowers D^2 for distinct values [lo, hi] against a new centre at `v`. */
static void seed_update(group_work *g, size_t lo, size_t hi, double v) {
    for (size_t i = lo; i <= hi; i++) {
        double d = g->val[i] - v, w = d * d * g->cnt[i];
        if (w < g->d2w[i]) g->d2w[i] = w;
    }
    for (size_t b = lo / BLOCK; b <= hi / BLOCK; b++)
        block_sum(g, b);
}

/* k-means++: the first centre drawn by count (or the distinct value
 * `pinned` when >= 0), each next one with probability proportional to
 * count x squared distance to the nearest. */
static int seed_centres(group_work *g, int k, long pinned, uint64_t *rng) {
    size_t nb = (g->u + BLOCK - 1) / BLOCK;
    double r = uniform01(rng) * (double)g->n, acc = 0;
    size_t first = g->u - 1;
    for (size_t i = 0; pinned < 0 && i < g->u; i++)
        if ((acc += g->cnt[i]) > r) {
            first = i;
            break;
        }
    if (pinned >= 0) first = (size_t)pinned;
    g->centre_of[0] = (int)first;
    for (size_t i = 0; i < g->u; i++)
        g->d2w[i] = INFINITY;
    seed_update(g, 0, g->u - 1, g->val[first]);
    int m = 1;
    while (m < k) {
        double total = 0;
        for (size_t b = 0; b < nb; b++)
            total += g->blk[b];
        if (!(total > 0)) break;
        double t = uniform01(rng) * total;
        size_t b = 0;
        while (b + 1 < nb && t >= g->blk[b])
            t -= g->blk[b++];
        size_t p = b * BLOCK, end = p + BLOCK < g->u ? p + BLOCK : g->u;
        while (p + 1 < end && t >= g->d2w[p])
            t -= g->d2w[p++];
        if (g->d2w[p] == 0) { /* rounding landed on a centre: take any value left */
            p = 0;
            while (p < g->u && g->d2w[p] == 0)
                p++;
            if (p == g->u) break;
        }
        int at = m;
        while (at > 0 && g->centre_of[at - 1] > (int)p) {
            g->centre_of[at] = g->centre_of[at - 1];
            at--;
        }
        g->centre_of[at] = (int)p;
        m++;
        size_t lo = at > 0 ? (size_t)g->centre_of[at - 1] : 0;
        size_t hi = at + 1 < m ? (size_t)g->centre_of[at + 1] : g->u - 1;
        seed_update(g, lo, hi, g->val[p]);
    }
    for (int j = 0; j < m; j++)
        g->c[j] = g->val[g->centre_of[j]];
    return m;
}

/* Lloyd's steps over sorted centres: cluster j is the run of values between
 * the midpoints to its neighbours (a value on a midpoint goes to the lower
 * centre), its new centre the run's weighted mean; with pin_zero a centre
 * at 0.0 stays there (the other runs hold no 0.0, so no other centre can
 * move onto it). */
static void lloyd(group_work *g, int m, int pin_zero) {
    size_t bound[256], prev[256];
    for (int j = 0; j < m; j++)
        prev[j] = (size_t)-1;
    for (int step = 0; step < MAX_LLOYD_STEPS; step++) {
        size_t i = 0;
        for (int j = 0; j + 1 < m; j++) {
            double mid = 0.5 * (g->c[j] + g->c[j + 1]);
            while (i < g->u && g->val[i] <= mid)
                i++;
            bound[j] = i;
        }
        bound[m - 1] = g->u;
        if (!memcmp(bound, prev, (size_t)m * sizeof bound[0])) break;
        size_t lo = 0;
        int moved = 0;
        for (int j = 0; j < m; j++) {
            double w = g->p0[bound[j]] - g->p0[lo];
            if (w > 0 && !(pin_zero && g->c[j] == 0.0)) {
                double c = (g->p1[bound[j]] - g->p1[lo]) / w;
                /* the table is fp16: a move below 1/64 of its spacing there
                 * cannot change an entry, however long the slow tail runs */
                moved |= fabs(c - g->c[j]) > ldexp(fmax(fabs(c), 0x1p-14), -16);
                g->c[j] = c;
            }
            lo = bound[j];
        }
        if (!moved) break;
        memcpy(prev, bound, (size_t)m * sizeof bound[0]);
    }
    /* an empty cluster keeps its old centre and may now be out of order */
    for (int a = 1; a < m; a++)
        for (int j = a; j > 0 && g->c[j - 1] > g->c[j]; j--) {
            double t = g->c[j];
            g->c[j] = g->c[j - 1];
            g->c[j - 1] = t;
        }
}

typedef struct pal_job {
    const nc_fp16 *data;
    lower_palette *pal;
    int64_t group_elems;
    int k;
    uint64_t seed;
    int zero_entry;
    int failed; /* out of memory in some task */
    double sq_err[64], sq[64];
} pal_job;

static int work_alloc(group_work *g, size_t n) {
    memset(g, 0, sizeof *g);
    g->n = n;
    size_t nu = n < 65536 ? n : 65536; /* distinct fp16 values */
    g->order = malloc(n * sizeof *g->order);
    g->tmp = malloc(n * sizeof *g->tmp);
    g->keys = malloc(n * sizeof *g->keys);
    g->val = malloc(nu * sizeof *g->val);
    g->cnt = malloc(nu * sizeof *g->cnt);
    g->d2w = malloc(nu * sizeof *g->d2w);
    g->blk = malloc((nu / BLOCK + 1) * sizeof *g->blk);
    g->p0 = malloc((nu + 1) * sizeof *g->p0);
    g->p1 = malloc((nu + 1) * sizeof *g->p1);
    g->lut_of = malloc(nu * sizeof *g->lut_of);
    return g->order && g->tmp && g->keys && g->val && g->cnt && g->d2w && g->blk && g->p0 &&
           g->p1 && g->lut_of;
}

static void work_free(group_work *g) {
    free(g->order);
    free(g->tmp);
    free(g->keys);
    free(g->val);
    free(g->cnt);
    free(g->d2w);
    free(g->blk);
    free(g->p0);
    free(g->p1);
    free(g->lut_of);
}

static void palettize_group(void *ctx, int task, int thread) {
    pal_job *j = ctx;
    group_work g;
    size_t n = (size_t)j->group_elems;
    const nc_fp16 *w = j->data + (size_t)task * n;
    if (!work_alloc(&g, n)) {
        work_free(&g);
        j->failed = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        g.keys[i] = order_key(w[i]);
    radix_sort(&g);
    /* distinct values ascending, with counts and prefix sums */
    g.u = 0;
    g.p0[0] = g.p1[0] = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t key = g.keys[g.order[i]];
        if (i == 0 || key != g.keys[g.order[i - 1]]) {
            g.val[g.u] = nc_fp16_to_f32(w[g.order[i]]);
            g.cnt[g.u++] = 0;
        }
        g.cnt[g.u - 1] += 1;
    }
    for (size_t i = 0; i < g.u; i++) {
        g.p0[i + 1] = g.p0[i] + g.cnt[i];
        g.p1[i + 1] = g.p1[i] + g.cnt[i] * g.val[i];
    }
    int m;
    if (g.u <= (size_t)j->k) { /* few enough values: the table holds them all */
        m = (int)g.u;
        for (size_t i = 0; i < g.u; i++)
            g.c[i] = g.val[i];
    } else {
        /* zero_entry: a group holding 0.0 keeps it as a fixed entry, so its
         * zeros (padding) expand to exactly 0; the zeros' cluster never
         * moves, so they do not pull the other entries either */
        long zero = -1;
        for (size_t i = 0; j->zero_entry && zero < 0 && i < g.u; i++)
            if (g.val[i] == 0.0) zero = (long)i;
        uint64_t rng = j->seed ^ ((uint64_t)task * 0xD1B54A32D192ED03ull);
        m = seed_centres(&g, j->k, zero, &rng);
        lloyd(&g, m, zero >= 0);
    }
    /* the table in fp16; unused entries repeat the last (never indexed) */
    nc_fp16 *lut = j->pal->lut + (size_t)task * (size_t)j->k;
    for (int e = 0; e < j->k; e++)
        lut[e] = nc_f32_to_fp16((float)g.c[e < m ? e : m - 1]);
    /* nearest entry per distinct value (ties to the lower one), by a sweep:
     * both the values and the rounded table ascend */
    int e = 0;
    double se = 0, s2 = 0;
    for (size_t i = 0; i < g.u; i++) {
        double v = g.val[i];
        while (e + 1 < m && fabs(v - nc_fp16_to_f32(lut[e + 1])) < fabs(v - nc_fp16_to_f32(lut[e])))
            e++;
        g.lut_of[i] = (uint32_t)e;
        double d = v - nc_fp16_to_f32(lut[e]);
        se += g.cnt[i] * d * d;
        s2 += g.cnt[i] * v * v;
    }
    uint8_t *idx = j->pal->indices + (size_t)task * n;
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && g.keys[g.order[i]] != g.keys[g.order[i - 1]]) u++;
        idx[g.order[i]] = (uint8_t)g.lut_of[u];
    }
    j->sq_err[thread & 63] += se;
    j->sq[thread & 63] += s2;
    work_free(&g);
}

nc_status lower_palettize(nc_pool *pool, lower_weight *w, const lower_palette_options *opt,
                          const char *what, lower_palette_stats *stats, nc_error *err) {
    mil_dtype idt = lower_palette_index_dtype(opt->bits);
    if (idt == MIL_DT_INVALID)
        return nc_fail(err, NC_ERR_INVALID, "%s: cannot palettize to %d bits (1, 2, 4, 6 or 8)",
                       what, opt->bits);
    if (!w->data || w->rank < 1 || w->dims[0] < 1)
        return nc_fail(err, NC_ERR_INTERNAL, "%s: no weight data to palettize", what);
    size_t numel = 1;
    for (int i = 0; i < w->rank; i++)
        numel *= (size_t)w->dims[i];
    for (size_t i = 0; i < numel; i++)
        if ((w->data[i] & 0x7c00) == 0x7c00)
            return nc_fail(err, NC_ERR_FORMAT, "%s: element %zu is not finite", what, i);
    int k = 1 << opt->bits;
    int64_t rows = lower_palette_group_rows(w->dims[0], opt->group_size);
    int64_t groups = w->dims[0] / rows;
    size_t group_elems = numel / (size_t)groups;
    if (group_elems > UINT32_MAX)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: groups of %zu weights are too large", what,
                       group_elems);
    size_t lut_n = (size_t)groups * (size_t)k;
    lower_palette *p = malloc(sizeof *p + numel + lut_n * sizeof(nc_fp16) + 1);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    p->bits = opt->bits;
    p->n_groups = groups;
    p->lut = (nc_fp16 *)(p + 1);
    p->indices = (uint8_t *)(p->lut + lut_n);
    pal_job j;
    memset(&j, 0, sizeof j);
    j.data = w->data;
    j.pal = p;
    j.group_elems = (int64_t)group_elems;
    j.k = k;
    j.seed = opt->seed;
    j.zero_entry = opt->zero_entry;
    nc_pool_for(pool, (int)groups, palettize_group, &j);
    if (j.failed) {
        free(p);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    }
    free(w->pal);
    w->pal = p;
    if (stats) {
        stats->n_weights += numel;
        stats->n_tensors++;
        stats->dense_bytes += 2 * (uint64_t)numel;
        stats->stored_bytes += ((uint64_t)numel * (uint64_t)opt->bits + 7) / 8 + 2 * lut_n;
        for (int i = 0; i < 64; i++) {
            stats->sum_sq_err += j.sq_err[i];
            stats->sum_sq += j.sq[i];
        }
    }
    return NC_OK;
}

mil_var *lower_palette_weight(mil_builder *b, const char *name, lower_weight *w) {
    char in[192], ln[192];
    snprintf(in, sizeof in, "%s_indices", name);
    snprintf(ln, sizeof ln, "%s_lut", name);
    const lower_palette *p = w->pal;
    mil_var *iv, *lv;
    if (w->val && w->lut_val) {
        iv = mil_build_const(b, in, w->val);
        lv = mil_build_const(b, ln, w->lut_val);
    } else {
        /* table shape [groups, 1, ..., 1, 2^bits, 1]: groups along the
         * output channels, scalar (not vector) entries */
        int64_t ld[6];
        ld[0] = p->n_groups;
        for (int i = 1; i < w->rank; i++)
            ld[i] = 1;
        ld[w->rank] = (int64_t)1 << p->bits;
        ld[w->rank + 1] = 1;
        iv = mil_build_const_tensor(b, in, lower_palette_index_dtype(p->bits), w->rank, w->dims,
                                    p->indices);
        lv = iv ? mil_build_const_tensor(b, ln, MIL_DT_FP16, w->rank + 2, ld, p->lut) : NULL;
        if (iv && lv) {
            w->val = iv->cval;
            w->lut_val = lv->cval;
        }
    }
    if (!iv || !lv) return NULL;
    mil_build_arg args[2] = {{"indices", iv, NULL, NULL, 0}, {"lut", lv, NULL, NULL, 0}};
    return mil_build_op(b, "constexpr_lut_to_dense", name, args, 2);
}
