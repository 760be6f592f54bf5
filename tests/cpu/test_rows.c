/* The kernel tables' row kernels (rows.h) on every table this CPU runs,
 * against LayerNorm, residual add, rotate-half RoPE, RMSNorm, the SiLU,
 * GELU-tanh and sigmoid gates, the multiply-add and the SiLU alone computed
 * here in double: every length from 1 to 80 (the vector tails), the real
 * widths (768, 1152, heads of 64 and 128), rows with a large common offset
 * (the variance must be taken around the mean), in and out of place, with
 * the element past the end left untouched. */
#include <math.h>
#include <string.h>

#include "../test.h"
#include "cpu/cpu_kernels.h"
#include "cpu/rows.h"

static uint32_t rng = 11;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

static void layernorm_ref(double *out, const float *x, const float *w, int n, double eps) {
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    double mean = sum / n;
    for (int i = 0; i < n; i++)
        sq += (x[i] - mean) * (x[i] - mean);
    double rstd = 1.0 / sqrt(sq / n + eps);
    for (int i = 0; i < n; i++)
        out[i] = (x[i] - mean) * rstd * w[i];
}

enum { MAXN = 1152 };

/* n values, offset added to each: returns the worst error in units of
 * max(1, |ref|), infinity if it wrote past the end. */
static double layernorm_case(const cpu_kernels *k, int n, float offset, int inplace) {
    float x[MAXN + 1], w[MAXN], out[MAXN + 1], keep[MAXN];
    double ref[MAXN];
    for (int i = 0; i < n; i++)
        x[i] = offset + 3.0f * frand(), w[i] = 1.0f + 0.5f * frand();
    memcpy(keep, x, sizeof(float) * (size_t)n);
    float *o = inplace ? x : out;
    o[n] = 12345.0f;
    layernorm_ref(ref, keep, w, n, 1e-5);
    k->rows->layernorm(o, inplace ? x : keep, w, n, 1e-5f);
    double worst = 0;
    for (int i = 0; i < n; i++)
        worst = nc_worse(worst, fabs(o[i] - ref[i]) / fmax(1.0, fabs(ref[i])));
    return o[n] == 12345.0f ? worst : INFINITY; /* wrote past the end */
}

static void test_layernorm_all_lengths_and_offsets_all_tables(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    const int widths[] = {768, 1152, 1024, 100};
    for (int ti = 0; ti < nt; ti++) {
        double worst = 0;
        for (int n = 1; n <= 80; n++)
            for (int inplace = 0; inplace < 2; inplace++)
                worst = nc_worse(worst, layernorm_case(tabs[ti], n, 0.0f, inplace));
        for (size_t j = 0; j < sizeof widths / sizeof *widths; j++)
            for (int inplace = 0; inplace < 2; inplace++) {
                worst = nc_worse(worst, layernorm_case(tabs[ti], widths[j], 0.0f, inplace));
                /* a common offset 30x the spread: a variance from E[x^2] - mean^2
                 * would lose ~10 bits here */
                worst = nc_worse(worst, layernorm_case(tabs[ti], widths[j], 100.0f, inplace));
            }
        printf("  %s: layernorm max error %.3g\n", tabs[ti]->name, worst);
        CHECKF(worst <= 1e-5, "%s: layernorm off by %g", tabs[ti]->name, worst);
    }
}

static void test_add_and_rope_exact_all_tables(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    for (int ti = 0; ti < nt; ti++) {
        const cpu_kernels *k = tabs[ti];
        for (int n = 1; n <= 80; n++) {
            float d[81], s[80], keep[80];
            for (int i = 0; i < n; i++)
                d[i] = frand(), s[i] = frand();
            memcpy(keep, d, sizeof(float) * (size_t)n);
            d[n] = 12345.0f;
            k->rows->add(d, s, (size_t)n);
            int same = d[n] == 12345.0f;
            for (int i = 0; i < n; i++)
                same &= d[i] == keep[i] + s[i]; /* one rounding: exact */
            CHECKF(same, "%s: add n=%d", k->name, n);
        }
        const int dims[] = {2, 8, 16, 30, 32, 64, 96, 128};
        for (size_t j = 0; j < sizeof dims / sizeof *dims; j++) {
            int hd = dims[j], h = hd / 2;
            float v[129], c[64], sn[64], keep[128];
            for (int i = 0; i < hd; i++)
                v[i] = 4.0f * frand();
            for (int i = 0; i < h; i++) {
                double a = 3.0 * frand();
                c[i] = (float)cos(a), sn[i] = (float)sin(a);
            }
            memcpy(keep, v, sizeof(float) * (size_t)hd);
            v[hd] = 12345.0f;
            k->rows->rope(v, c, sn, hd);
            double worst = 0;
            for (int i = 0; i < h; i++) {
                double a = keep[i], b = keep[i + h];
                worst = nc_worse(worst, fabs(v[i] - (a * c[i] - b * sn[i])));
                worst = nc_worse(worst, fabs(v[i + h] - (b * c[i] + a * sn[i])));
            }
            CHECKF(worst <= 4.0 * 4 * 1.2e-7 && v[hd] == 12345.0f, "%s: rope hd=%d off by %g",
                   k->name, hd, worst);
        }
    }
}

/* Every table's RMSNorm and gates against double formulas: lengths around
 * each vector width (the tails), values from 0 to where e^-|x| leaves
 * fp32, both signs; out aliased to an input as the decoders call them. */
static void test_rmsnorm_and_gates_match_double(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    enum { N = 131 };
    float x[N], w[N], u[N], out[N];
    for (int ti = 0; ti < nt; ti++) {
        const cpu_row_kernels *rk = tabs[ti]->rows;
        for (int n = 1; n <= N; n += n < 40 ? 1 : 13) {
            for (int i = 0; i < n; i++) {
                /* |x| up to ~110 (e^-110 is below fp32's smallest normal) */
                x[i] = (float)((i % 2 ? -1 : 1) * ((i * 37 % 101) * 0.01 + (i % 7 == 0) * i * 0.8));
                w[i] = 0.5f + (float)(i % 5) * 0.25f;
                u[i] = 1.0f - (float)(i % 3) * 0.75f;
            }
            double ss = 0;
            for (int i = 0; i < n; i++)
                ss += (double)x[i] * x[i];
            double r = 1 / sqrt(ss / n + 1e-6);
            rk->rmsnorm(out, x, w, n, 1e-6f);
            for (int i = 0; i < n; i++)
                CHECK_NEAR(out[i], w[i] * x[i] * r, 2e-6 * fabs(w[i] * x[i] * r) + 1e-30);
            float in_place[N];
            memcpy(in_place, x, sizeof(float) * (size_t)n);
            rk->rmsnorm(in_place, in_place, w, n, 1e-6f); /* as the QK norm calls it */
            CHECK(!memcmp(in_place, out, sizeof(float) * (size_t)n));
            memcpy(out, x, sizeof(float) * (size_t)n);
            rk->silu_mul(out, out, u, (size_t)n); /* in place, as the MLP calls it */
            for (int i = 0; i < n; i++) {
                double want = x[i] / (1 + exp(-(double)x[i])) * u[i];
                CHECK_NEAR(out[i], want, 2e-6 * fabs(want) + 1e-30);
            }
            memcpy(out, u, sizeof(float) * (size_t)n);
            rk->gelu_tanh_mul(out, x, out, (size_t)n); /* out aliases u */
            for (int i = 0; i < n; i++) {
                double xd = x[i], y = sqrt(2 / M_PI) * (xd + 0.044715 * xd * xd * xd);
                double want = 0.5 * xd * (1 + tanh(y)) * u[i];
                /* where the GELU is e^2y small, y's own fp32 rounding
                 * (torch's too) moves it by ~|2y| ulp */
                CHECK_NEAR(out[i], want, (2e-6 + 2.4e-7 * fabs(2 * y)) * fabs(want) + 1e-30);
            }
            memcpy(out, u, sizeof(float) * (size_t)n);
            rk->sigmoid_mul(out, x, out, (size_t)n); /* out aliases u, as Qwen3.5's gate */
            for (int i = 0; i < n; i++) {
                double want = u[i] / (1 + exp(-(double)x[i]));
                CHECK_NEAR(out[i], want, 2e-6 * fabs(want) + 1e-30);
            }
            memcpy(out, u, sizeof(float) * (size_t)n);
            rk->mul_add(out, x, w, (size_t)n); /* the conv's accumulation */
            for (int i = 0; i < n; i++) {
                double prod = (double)x[i] * w[i], want = u[i] + prod;
                CHECK_NEAR(out[i], want, 1.2e-7 * (fabs(u[i]) + fabs(prod)) + 1e-30);
            }
            memcpy(out, x, sizeof(float) * (size_t)n);
            rk->silu(out, out, (size_t)n); /* in place, as the conv calls it */
            for (int i = 0; i < n; i++) {
                double want = x[i] / (1 + exp(-(double)x[i]));
                CHECK_NEAR(out[i], want, 2e-6 * fabs(want) + 1e-30);
            }
        }
        float g[3] = {0, -0.0f, 2}, one[3] = {1, 1, 1};
        rk->silu_mul(g, g, one, 3);
        CHECK(g[0] == 0.0f && g[1] == 0.0f && g[2] > 1.76f);
    }
}

int main(void) {
    RUN(test_layernorm_all_lengths_and_offsets_all_tables);
    RUN(test_add_and_rope_exact_all_tables);
    RUN(test_rmsnorm_and_gates_match_double);
    return nc_test_exit_code();
}
