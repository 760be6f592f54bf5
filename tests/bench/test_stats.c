/* The harness statistics against numpy and scipy (fixtures written by
 * tools/make_bench_fixtures.py): means, sample sds and numpy-default
 * percentiles; bootstrap intervals equal to the Python re-implementation of
 * the same PRNG spec (to rounding) and within Monte-Carlo tolerance of
 * scipy.stats.bootstrap's percentile intervals. */
#include <math.h>
#include <stdlib.h>

#include "../test.h"
#include "base/json.h"
#include "bench/stats.h"
#include "gen/rng.h"

static const char *FIXTURE = "tests/fixtures/bench/stats_cases.json";

static double *json_doubles(const json_t *arr, size_t *n) {
    *n = json_array_size(arr);
    double *v = malloc((*n ? *n : 1) * sizeof *v);
    for (size_t i = 0; i < *n; i++)
        v[i] = json_number_value(json_array_get(arr, i));
    return v;
}

static int rel_close(double a, double b, double rel) {
    return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + 1e-300;
}

static void test_summary_matches_numpy(void) {
    json_t *doc;
    nc_error err;
    CHECK_OK(nc_json_load_file(FIXTURE, &doc, &err), &err);
    size_t ci;
    json_t *c;
    int n_cases = 0;
    json_array_foreach(json_object_get(doc, "cases"), ci, c) {
        size_t n;
        double *x = json_doubles(json_object_get(c, "x"), &n);
        nc_summary s;
        nc_status st = nc_summarize(x, n, &s, &err);
        const char *name = json_string_value(json_object_get(c, "name"));
        int ok = st == NC_OK &&
                 rel_close(s.mean, json_number_value(json_object_get(c, "mean")), 1e-13) &&
                 rel_close(s.sd, json_number_value(json_object_get(c, "sd")), 1e-12) &&
                 rel_close(s.p50, json_number_value(json_object_get(c, "p50")), 1e-14) &&
                 rel_close(s.p95, json_number_value(json_object_get(c, "p95")), 1e-14);
        /* every tabulated percentile, on a sorted copy */
        double *sorted = malloc(n * sizeof *sorted);
        memcpy(sorted, x, n * sizeof *sorted);
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                double t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        size_t pi;
        json_t *pair;
        json_array_foreach(json_object_get(c, "percentiles"), pi, pair) {
            double p = json_number_value(json_array_get(pair, 0));
            double want = json_number_value(json_array_get(pair, 1));
            double got = nc_percentile_sorted(sorted, n, p);
            if (!rel_close(got, want, 1e-14)) {
                printf("  %s: P%g = %.17g, numpy %.17g\n", name, p, got, want);
                ok = 0;
            }
        }
        free(sorted);
        free(x);
        CHECKF(ok, "case %s: mean %.17g sd %.17g p50 %.17g p95 %.17g", name, s.mean, s.sd, s.p50,
               s.p95);
        n_cases++;
    }
    json_decref(doc);
    CHECK(n_cases >= 5);
}

static void test_rng_reference_vectors(void) {
    /* the first state word is splitmix64's first output from 0:
     * 0xe220a8397b1dcdaf (Vigna's reference) */
    gen_rng r;
    gen_rng_seed(&r, 0);
    CHECK(r.s[0] == 0xe220a8397b1dcdafull);
    json_t *doc;
    nc_error err;
    CHECK_OK(nc_json_load_file(FIXTURE, &doc, &err), &err);
    json_t *rng = json_object_get(doc, "rng");
    gen_rng_seed(&r, 0);
    for (size_t i = 0; i < 4; i++) {
        const char *want =
            json_string_value(json_array_get(json_object_get(rng, "xoshiro_first"), i));
        unsigned long long got = (unsigned long long)gen_rng_next(&r);
        CHECKF(want && strtoull(want, NULL, 10) == got, "xoshiro output %zu: %llu vs %s", i, got,
               want ? want : "?");
    }
    json_decref(doc);
}

/* (t_A/t_B) x (P_A/P_B) for groups ordered tA, PA (paired), tB, PB (paired) */
static double paired_product(const double *r, void *ctx) {
    (void)ctx;
    return (r[0] / r[2]) * (r[1] / r[3]);
}

static void test_bootstrap_matches_spec_and_scipy(void) {
    json_t *doc;
    nc_error err;
    CHECK_OK(nc_json_load_file(FIXTURE, &doc, &err), &err);
    size_t bi;
    json_t *b;
    int n_cases = 0;
    json_array_foreach(json_object_get(doc, "bootstrap"), bi, b) {
        const char *name = json_string_value(json_object_get(b, "name"));
        nc_boot_group groups[4];
        double *bufs[8] = {0};
        size_t n_groups = json_array_size(json_object_get(b, "groups"));
        CHECK(n_groups <= 4);
        for (size_t g = 0; g < n_groups; g++) {
            json_t *jg = json_array_get(json_object_get(b, "groups"), g);
            size_t n, nd;
            bufs[2 * g] = json_doubles(json_object_get(jg, "num"), &n);
            groups[g].num = bufs[2 * g];
            groups[g].n = n;
            groups[g].den = NULL;
            groups[g].is_paired_with_previous = json_is_true(json_object_get(jg, "paired"));
            if (json_object_get(jg, "den")) {
                bufs[2 * g + 1] = json_doubles(json_object_get(jg, "den"), &nd);
                groups[g].den = bufs[2 * g + 1];
            }
        }
        const char *stat = json_string_value(json_object_get(b, "stat"));
        nc_boot_stat_fn fn = !strcmp(stat, "ratio")            ? nc_boot_stat_ratio
                             : !strcmp(stat, "paired_product") ? paired_product
                                                               : nc_boot_stat_ratio_product;
        nc_interval iv;
        nc_status st =
            nc_bootstrap(groups, (int)n_groups, fn, NULL,
                         (int)json_integer_value(json_object_get(b, "n_resamples")),
                         json_number_value(json_object_get(b, "confidence")),
                         (uint64_t)json_integer_value(json_object_get(b, "seed")), &iv, &err);
        for (int i = 0; i < 8; i++)
            free(bufs[i]);
        CHECK_OK(st, &err);
        double lo = json_number_value(json_object_get(b, "lower"));
        double hi = json_number_value(json_object_get(b, "upper"));
        double est = json_number_value(json_object_get(b, "estimate"));
        CHECKF(rel_close(iv.estimate, est, 1e-12) && rel_close(iv.lower, lo, 1e-12) &&
                   rel_close(iv.upper, hi, 1e-12),
               "%s: C [%.17g, %.17g] est %.17g, Python spec [%.17g, %.17g] est %.17g", name,
               iv.lower, iv.upper, iv.estimate, lo, hi, est);
        /* scipy: another implementation and PRNG; bounds agree to a tenth of
         * the interval width (Monte-Carlo error is ~2% of it here) */
        double slo = json_number_value(json_object_get(b, "scipy_lower"));
        double shi = json_number_value(json_object_get(b, "scipy_upper"));
        double tol = 0.1 * (shi - slo);
        CHECKF(fabs(iv.lower - slo) <= tol && fabs(iv.upper - shi) <= tol,
               "%s: C [%g, %g] vs scipy [%g, %g]", name, iv.lower, iv.upper, slo, shi);
        CHECK(iv.n_invalid == 0);
        n_cases++;
    }
    json_decref(doc);
    CHECK(n_cases >= 5);
}

static void test_claims_need_the_lower_bound(void) {
    nc_interval iv = {0};
    iv.lower = 9.7;
    iv.upper = 14;
    iv.estimate = 11.5; /* estimate above 10, but the interval does not support 10x */
    CHECK(nc_claim_factor(&iv) == 9);
    iv.lower = 1.9;
    CHECK(nc_claim_factor(&iv) == 0);
    iv.lower = NAN;
    CHECK(nc_claim_factor(&iv) == 0);
    iv.lower = 10.0;
    CHECK(nc_claim_factor(&iv) == 10);
}

static void test_bootstrap_rejects_bad_input(void) {
    nc_error err;
    nc_interval iv;
    double x[2] = {1, 2};
    nc_boot_group g[2] = {{x, NULL, 2, 0}, {x, NULL, 0, 0}};
    CHECK(nc_bootstrap(g, 2, nc_boot_stat_ratio, NULL, 100, 0.95, 1, &iv, &err) == NC_ERR_INVALID);
    g[1].n = 2;
    CHECK(nc_bootstrap(g, 2, nc_boot_stat_ratio, NULL, 100, 1.5, 1, &iv, &err) == NC_ERR_INVALID);
    CHECK_OK(nc_bootstrap(g, 2, nc_boot_stat_ratio, NULL, 100, 0.95, 1, &iv, &err), &err);
    CHECK(iv.estimate == 1.0 && iv.lower <= 1.0 && iv.upper >= 1.0);
    /* a paired group reuses the same draws: x against itself is exactly 1 */
    g[1].is_paired_with_previous = 1;
    CHECK_OK(nc_bootstrap(g, 2, nc_boot_stat_ratio, NULL, 100, 0.95, 1, &iv, &err), &err);
    CHECK(iv.lower == 1.0 && iv.upper == 1.0);
    g[0].n = 1;
    CHECK(nc_bootstrap(g, 2, nc_boot_stat_ratio, NULL, 100, 0.95, 1, &iv, &err) == NC_ERR_INVALID);
}

int main(void) {
    RUN(test_summary_matches_numpy);
    RUN(test_rng_reference_vectors);
    RUN(test_bootstrap_matches_spec_and_scipy);
    RUN(test_claims_need_the_lower_bound);
    RUN(test_bootstrap_rejects_bad_input);
    return nc_test_exit_code();
}
