/* The kernel tables' exact GELU (gelu.h) on every table this CPU runs, against
 * 0.5 x (1 + erf(x / sqrt 2)) computed here in double (erfc(-x / sqrt 2) for
 * x < 0, where 1 + erf cancels): a dense sweep of [-10, 10], random values
 * over wide ranges, the special values, and the gated form at every length
 * from 1 to 40 (the vector tails), in and out of place. */
#include <math.h>

#include "../test.h"
#include "cpu/cpu_kernels.h"

#define TOL 2e-7 /* times max(1, |x|) */

static double gelu_ref(double x) {
    return x < 0 ? 0.5 * x * erfc(-x * M_SQRT1_2) : 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
}

static uint32_t rng = 7;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

static void test_sweep_and_random_within_bound_all_tables(void) {
    enum { SWEEP = 20 * 1024 + 1, RANDOM = 30000, N = SWEEP + RANDOM };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    for (int i = 0; i < SWEEP; i++) /* -10 .. 10 in steps of 1/1024 */
        x[i] = (float)(i - SWEEP / 2) / 1024.0f;
    for (int i = 0; i < RANDOM; i++) { /* 1e-6 .. 1e3 in magnitude, both signs */
        float m = powf(10.0f, 4.5f * frand() - 1.5f);
        x[SWEEP + i] = frand() < 0 ? -m : m;
    }
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    for (int ti = 0; ti < nt; ti++) {
        tabs[ti]->gelu(y, x, NULL, N); /* N is odd: the tail too */
        double worst = 0, at = 0;
        for (int i = 0; i < N; i++) {
            double e = fabs(y[i] - gelu_ref(x[i])) / fmax(1.0, fabs(x[i]));
            if (e > worst) worst = e, at = x[i];
        }
        printf("  %s: max |gelu - ref| / max(1, |x|) = %.3g (x = %.6g)\n", tabs[ti]->name, worst,
               at);
        CHECKF(worst <= TOL, "%s: %g at x = %g", tabs[ti]->name, worst, at);
    }
    free(x);
    free(y);
}

static void test_special_values_all_tables(void) {
    const float x[] = {0.0f,   -0.0f,   NAN,    INFINITY, -INFINITY, 3e38f, -3e38f,
                       1e-38f, -1e-38f, 1e-45f, 5.5f,     -5.5f,     5.6f,  -5.6f};
    enum { N = sizeof x / sizeof *x };
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    for (int ti = 0; ti < nt; ti++) {
        float y[N];
        tabs[ti]->gelu(y, x, NULL, N);
        const char *t = tabs[ti]->name;
        CHECKF(y[0] == 0 && !signbit(y[0]), "%s: gelu(0) = %g", t, y[0]);
        CHECKF(y[1] == 0 && signbit(y[1]), "%s: gelu(-0) = %g", t, y[1]);
        CHECKF(isnan(y[2]), "%s: gelu(nan) = %g", t, y[2]);
        CHECKF(y[3] == INFINITY, "%s: gelu(inf) = %g", t, y[3]);
        CHECKF(y[4] == 0, "%s: gelu(-inf) = %g (the limit is 0)", t, y[4]);
        CHECKF(y[5] == 3e38f, "%s: gelu(3e38) = %g", t, y[5]);
        CHECKF(y[6] == 0, "%s: gelu(-3e38) = %g", t, y[6]);
        for (int i = 7; i < N; i++)
            CHECKF(fabs(y[i] - gelu_ref(x[i])) <= TOL * fmax(1.0, fabs(x[i])), "%s: gelu(%g) = %g",
                   t, x[i], y[i]);
    }
}

static void test_gated_every_tail_in_and_out_of_place_all_tables(void) {
    enum { MAXN = 40 };
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int n = 1; n <= MAXN; n++)
            for (int inplace = 0; inplace < 2; inplace++) {
                float a[MAXN + 1], g[MAXN], out[MAXN + 1];
                for (int i = 0; i < n; i++)
                    a[i] = 6.0f * frand(), g[i] = 2.0f * frand();
                float *o = inplace ? a : out;
                float keep[MAXN];
                memcpy(keep, a, sizeof(float) * (size_t)n);
                o[n] = 12345.0f; /* past the end: untouched */
                tabs[ti]->gelu(o, a, g, (size_t)n);
                for (int i = 0; i < n; i++) {
                    double ref = gelu_ref(keep[i]) * g[i];
                    /* the product's own rounding on top of the GELU's bound */
                    double tol = TOL * fmax(1.0, fabs(keep[i])) * fabs(g[i]) + 6e-8 * fabs(ref);
                    CHECKF(fabs(o[i] - ref) <= tol, "%s n=%d i=%d: %g vs %g", tabs[ti]->name, n, i,
                           o[i], ref);
                }
                CHECK(o[n] == 12345.0f);
                cases++;
            }
    CHECK(cases == nt * MAXN * 2);
}

int main(void) {
    RUN(test_sweep_and_random_within_bound_all_tables);
    RUN(test_special_values_all_tables);
    RUN(test_gated_every_tail_in_and_out_of_place_all_tables);
    return nc_test_exit_code();
}
