/* Summary statistics and bootstrap confidence intervals for the harness.
 * Definitions (docs/measuring.md): mean = sum/n; sd is the sample standard
 * deviation (n-1); percentiles interpolate linearly between order
 * statistics, numpy's default ("linear", Hyndman-Fan type 7). */
#ifndef NC_BENCH_STATS_H
#define NC_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct nc_summary {
    size_t n;
    double mean, sd, min, max, p50, p95;
} nc_summary;

double nc_mean(const double *x, size_t n);
/* Sample standard deviation (divides by n - 1); 0 for n < 2. */
double nc_sd(const double *x, size_t n);
/* p in [0, 100] of an ascending array; numpy.percentile(x, p) exactly. */
double nc_percentile_sorted(const double *sorted, size_t n, double p);
/* Sorts a copy; fails only on allocation. */
nc_status nc_summarize(const double *x, size_t n, nc_summary *out, nc_error *err);

/* A bootstrap group: observations i = 0..n-1 with numerator num[i] and
 * denominator den[i] (den NULL means 1). Its statistic is sum(num)/sum(den):
 * the mean when den is NULL, time-weighted mean power when num are joules
 * and den seconds. */
typedef struct nc_boot_group {
    const double *num, *den;
    size_t n;
    /* When set, this group reuses the indices drawn for the group before it
     * (same n): two measurements of the same blocks stay together. */
    int is_paired_with_previous;
} nc_boot_group;

/* Combines the groups' ratios into the statistic of interest. */
typedef double (*nc_boot_stat_fn)(const double *group_ratios, void *ctx);

typedef struct nc_interval {
    double estimate; /* the statistic on the original samples */
    double lower, upper;
    double confidence; /* e.g. 0.95 */
    int n_resamples;
    int n_invalid; /* replicates whose statistic was NaN (dropped) */
} nc_interval;

/* Percentile bootstrap. For each of n_resamples replicates, for each group in
 * order, draw n indices floor(u * n), u = gen_rng_uniform, with replacement
 * within that group only (a paired group reuses the previous group's
 * indices and draws none) and form sum(num)/sum(den) summing in draw order; the
 * statistic of the replicates' ratios goes into a list. The interval is the
 * list's (1-c)/2 and (1+c)/2 percentiles (nc_percentile_sorted). The PRNG
 * (gen/rng.h: xoshiro256** seeded by splitmix64) is seeded once with `seed`. */
nc_status nc_bootstrap(const nc_boot_group *groups, int n_groups, nc_boot_stat_fn stat, void *ctx,
                       int n_resamples, double confidence, uint64_t seed, nc_interval *out,
                       nc_error *err);

/* Ready-made statistics: r0/r1 and (r0/r1)*(r2/r3). */
double nc_boot_stat_ratio(const double *r, void *ctx);
double nc_boot_stat_ratio_product(const double *r, void *ctx);

/* An "N x" claim is allowed only when the interval's lower bound is >= N:
 * returns the largest integer N >= 2 with lower >= N, or 0 (no claim). */
int nc_claim_factor(const nc_interval *iv);

#endif
