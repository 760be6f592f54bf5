/* Means, percentiles and the percentile bootstrap (see stats.h for the exact
 * definitions, which tools/make_bench_fixtures.py reimplements). */
#include "bench/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen/rng.h"

double nc_mean(const double *x, size_t n) {
    if (n == 0) return NAN;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s / (double)n;
}

double nc_sd(const double *x, size_t n) {
    if (n < 2) return 0.0;
    double m = nc_mean(x, n), ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - m) * (x[i] - m);
    return sqrt(ss / (double)(n - 1));
}

double nc_percentile_sorted(const double *sorted, size_t n, double p) {
    if (n == 0) return NAN;
    /* numpy: virtual index (n-1) * (p/100), floor and the next index, then
     * a + (b-a)t, computed from the upper end when t >= 0.5 */
    double virt = (double)(n - 1) * (p / 100.0);
    double prev = floor(virt);
    if (prev < 0) prev = 0;
    size_t i = (size_t)prev;
    if (i > n - 1) i = n - 1;
    size_t j = i + 1 < n ? i + 1 : n - 1;
    double t = virt - prev;
    double a = sorted[i], b = sorted[j], diff = b - a;
    return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

static int cmp_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

nc_status nc_summarize(const double *x, size_t n, nc_summary *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0) {
        out->mean = out->sd = out->min = out->max = out->p50 = out->p95 = NAN;
        return NC_OK;
    }
    double *s = malloc(n * sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "summary of %zu samples: out of memory", n);
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    out->mean = nc_mean(x, n);
    out->sd = nc_sd(x, n);
    out->min = s[0];
    out->max = s[n - 1];
    out->p50 = nc_percentile_sorted(s, n, 50);
    out->p95 = nc_percentile_sorted(s, n, 95);
    free(s);
    return NC_OK;
}

/* Index in [0, n): floor(u * n) for u = 53 random bits / 2^53, the same two
 * IEEE operations as the Python spec in tools/make_bench_fixtures.py. */
static size_t draw_index(gen_rng *r, size_t n) {
    double scaled = gen_rng_uniform(r) * (double)n;
    size_t i = (size_t)scaled;
    return i < n ? i : n - 1;
}

static double group_ratio(const nc_boot_group *g, const size_t *idx) {
    double num = 0, den = 0;
    for (size_t k = 0; k < g->n; k++) {
        size_t i = idx ? idx[k] : k;
        num += g->num[i];
        den += g->den ? g->den[i] : 1.0;
    }
    return num / den;
}

#define NC_BOOT_MAX_GROUPS 8

nc_status nc_bootstrap(const nc_boot_group *groups, int n_groups, nc_boot_stat_fn stat, void *ctx,
                       int n_resamples, double confidence, uint64_t seed, nc_interval *out,
                       nc_error *err) {
    if (n_groups < 1 || n_groups > NC_BOOT_MAX_GROUPS)
        return nc_fail(err, NC_ERR_INVALID, "bootstrap: %d groups (1..%d)", n_groups,
                       NC_BOOT_MAX_GROUPS);
    if (n_resamples < 1 || !(confidence > 0 && confidence < 1))
        return nc_fail(err, NC_ERR_INVALID, "bootstrap: %d resamples at confidence %g", n_resamples,
                       confidence);
    size_t max_n = 0;
    for (int g = 0; g < n_groups; g++) {
        if (groups[g].n == 0)
            return nc_fail(err, NC_ERR_INVALID, "bootstrap: group %d has no samples", g);
        if (groups[g].n > max_n) max_n = groups[g].n;
        if (groups[g].is_paired_with_previous && (g == 0 || groups[g - 1].n != groups[g].n))
            return nc_fail(err, NC_ERR_INVALID,
                           "bootstrap: group %d is paired but the previous group differs in size",
                           g);
    }
    double r[NC_BOOT_MAX_GROUPS];
    for (int g = 0; g < n_groups; g++)
        r[g] = group_ratio(&groups[g], NULL);
    memset(out, 0, sizeof *out);
    out->estimate = stat(r, ctx);
    out->confidence = confidence;
    out->n_resamples = n_resamples;
    size_t *idx = malloc(max_n * sizeof *idx);
    double *reps = malloc((size_t)n_resamples * sizeof *reps);
    if (!idx || !reps) {
        free(idx);
        free(reps);
        return nc_fail(err, NC_ERR_NOMEM, "bootstrap: out of memory");
    }
    gen_rng rng; /* the sampler's xoshiro256** seeded by splitmix64 */
    gen_rng_seed(&rng, seed);
    int n_ok = 0;
    for (int b = 0; b < n_resamples; b++) {
        for (int g = 0; g < n_groups; g++) {
            if (!groups[g].is_paired_with_previous)
                for (size_t k = 0; k < groups[g].n; k++)
                    idx[k] = draw_index(&rng, groups[g].n);
            r[g] = group_ratio(&groups[g], idx);
        }
        double v = stat(r, ctx);
        if (isnan(v))
            out->n_invalid++;
        else
            reps[n_ok++] = v;
    }
    if (n_ok == 0) {
        out->lower = out->upper = NAN;
    } else {
        qsort(reps, (size_t)n_ok, sizeof *reps, cmp_double);
        out->lower = nc_percentile_sorted(reps, (size_t)n_ok, 100.0 * (1.0 - confidence) / 2.0);
        out->upper = nc_percentile_sorted(reps, (size_t)n_ok, 100.0 * (1.0 + confidence) / 2.0);
    }
    free(idx);
    free(reps);
    return NC_OK;
}

double nc_boot_stat_ratio(const double *r, void *ctx) {
    (void)ctx;
    return r[0] / r[1];
}

double nc_boot_stat_ratio_product(const double *r, void *ctx) {
    (void)ctx;
    return (r[0] / r[1]) * (r[2] / r[3]);
}

int nc_claim_factor(const nc_interval *iv) {
    if (!(iv->lower >= 2.0) || isinf(iv->lower)) return 0;
    double f = floor(iv->lower);
    return f > 1e6 ? 1000000 : (int)f;
}
