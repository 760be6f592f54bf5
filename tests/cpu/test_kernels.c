/* CPU kernels: every kernel table this CPU can run (scalar, AVX2, ...)
 * against a double-precision reference written here, on awkward sizes (k not
 * a multiple of the vector width, odd row and token counts, sub-ranges of
 * rows, padded strides); the prompt GEMM for every weight type incl. Q8/Q4
 * (token counts 1..40, rows not a multiple of the panel block, several K
 * blocks) and cpu_matmul_act's routing onto it; the threaded matmul's row
 * split against one call; RoPE's rotate-half pairing and RMSNorm on
 * hand-checked values. tests/cpu/test_neon_qemu.sh runs this file for NEON. */
#include <math.h>

#include "../common/weights.h"
#include "../test.h"
#include "base/half.h"
#include "base/pool.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_ops.h"
#include "cpu/cpu_quant.h"
#include "cpu/gemm_bf16.h"
#include "cpu/rows.h"

static uint32_t rng = 1;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

/* W as stored (dtype t) and its exact fp32 values. */
static void make_weights(cpu_wtype t, void *w, float *wf, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = frand();
        if (t == CPU_W_F32) ((float *)w)[i] = wf[i] = v;
        if (t == CPU_W_F16) wf[i] = nc_fp16_to_f32(((nc_fp16 *)w)[i] = nc_f32_to_fp16(v));
        if (t == CPU_W_BF16) wf[i] = nc_bf16_to_f32(((nc_bf16 *)w)[i] = nc_f32_to_bf16(v));
    }
}

static void test_matmul_all_tables_all_dtypes_awkward_sizes(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    static const int ks[] = {1, 7, 8, 9, 16, 31, 33, 100};
    static const int ns[] = {1, 2, 3, 4, 5, 9};
    const int rows = 13, ldw_pad = 3, ld_pad = 5;
    int checked = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int dt = CPU_W_F32; dt <= CPU_W_BF16; dt++) /* the float weight types */
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                    int k = ks[ki], n = ns[ni], ldw = k + ldw_pad, ldx = k + ld_pad,
                        ldy = rows + ld_pad;
                    float *wf = malloc(sizeof(float) * rows * ldw);
                    void *w = malloc(4 * (size_t)rows * ldw);
                    float *x = malloc(sizeof(float) * n * ldx);
                    float *y = malloc(sizeof(float) * n * ldy);
                    make_weights((cpu_wtype)dt, w, wf, (size_t)rows * ldw);
                    for (int i = 0; i < n * ldx; i++)
                        x[i] = frand();
                    for (int i = 0; i < n * ldy; i++)
                        y[i] = 12345.0f;
                    int r0 = 2, r1 = rows - 1; /* a sub-range: rows outside stay untouched */
                    tabs[ti]->matmul[dt](w, (size_t)ldw, x, (size_t)ldx, y, (size_t)ldy, n, k, r0,
                                         r1);
                    int bad = 0;
                    for (int t = 0; t < n && !bad; t++)
                        for (int r = 0; r < rows && !bad; r++) {
                            double ref = 0;
                            for (int i = 0; i < k; i++)
                                ref += (double)x[t * ldx + i] * wf[r * ldw + i];
                            float got = y[t * ldy + r];
                            if (r < r0 || r >= r1)
                                bad = got != 12345.0f;
                            else
                                bad = !(fabs(got - ref) <= 1e-5 * (k + 1));
                            if (bad)
                                printf("  %s %s k=%d n=%d row %d tok %d: got %g want %g\n",
                                       tabs[ti]->name, cpu_wtype_name((cpu_wtype)dt), k, n, r, t,
                                       got, ref);
                        }
                    free(wf);
                    free(w);
                    free(x);
                    free(y);
                    CHECK(!bad);
                    checked++;
                }
    printf("  %d kernel tables (", nt);
    for (int i = 0; i < nt; i++)
        printf("%s%s", i ? ", " : "", tabs[i]->name);
    printf("), %d cases\n", checked);
}

/* ---- The prompt GEMM (cpu_gemm_kernels): pack a task's weight rows into
 * fp32 panels, then the outer-product microkernel; every weight type. ----
 *
 * Weights from nc_test_stored_weights (tests/common/weights.h), 3 elements
 * of padding per float row. */
static float frand_at(int i) {
    (void)i;
    return frand();
}

static void *make_stored_weights(cpu_wtype t, int rows, int k, float *wf, size_t *ldw_bytes) {
    return nc_test_stored_weights(t, rows, k, 3, frand_at, wf, ldw_bytes);
}

/* Packs rows r0..r0+rows of a (r0 + rows + 2)-row matrix with g and runs n
 * tokens into a padded y, through run and, where g has them, through
 * x_prep (every row into one buffer) and run_x; every output within
 * tol * (k + 1) of the double product and every padding cell untouched.
 * Returns 0 and prints the case if not. */
static int check_gemm_with(const cpu_gemm_kernels *g, const char *name, cpu_wtype t, int k, int n,
                           int rows, double tol) {
    const int r0 = 3, all_rows = r0 + rows + 2, ldx = k + 5, ldy = all_rows + 4;
    float *wf = malloc(sizeof(float) * (size_t)all_rows * k);
    size_t ldw;
    void *w = make_stored_weights(t, all_rows, k, wf, &ldw);
    float *x = malloc(sizeof(float) * (size_t)n * ldx);
    float *y = malloc(sizeof(float) * (size_t)n * ldy);
    float *panel = malloc(sizeof(float) * cpu_gemm_panel_floats(g, rows, k));
    void *xb = g->x_prep ? malloc(g->x_bytes(n, k)) : NULL;
    for (int i = 0; i < n * ldx; i++)
        x[i] = frand();
    g->pack(t, w, ldw, k, r0, r0 + rows, panel);
    int ok = 1;
    for (int path = 0; path < (xb ? 2 : 1) && ok; path++) {
        for (int i = 0; i < n * ldy; i++)
            y[i] = 12345.0f;
        if (path == 0) {
            g->run(panel, k, rows, x, (size_t)ldx, y + r0, (size_t)ldy, n);
        } else {
            for (int b = 0; b < n; b++)
                g->x_prep(x + (size_t)b * ldx, n, k, b, xb);
            g->run_x(panel, k, rows, xb, n, y + r0, (size_t)ldy);
        }
        for (int b = 0; b < n && ok; b++)
            for (int r = 0; r < ldy && ok; r++) {
                float got = y[(size_t)b * ldy + r];
                if (r < r0 || r >= r0 + rows) {
                    ok = got == 12345.0f;
                } else {
                    double ref = 0;
                    for (int i = 0; i < k; i++)
                        ref += (double)x[(size_t)b * ldx + i] * wf[(size_t)r * k + i];
                    ok = fabs(got - ref) <= tol * (k + 1);
                }
                if (!ok)
                    printf("  %s %s%s k=%d n=%d rows=%d: token %d row %d got %g\n", name,
                           cpu_wtype_name(t), path ? " (x_prep, run_x)" : "", k, n, rows, b, r,
                           got);
            }
    }
    free(wf);
    free(w);
    free(x);
    free(y);
    free(panel);
    free(xb);
    return ok;
}

static int check_gemm(const cpu_kernels *kt, cpu_wtype t, int k, int n, int rows) {
    return check_gemm_with(&kt->gemm, kt->name, t, k, n, rows, 1e-5);
}

/* The bf16 dot-product GEMMs (gemm_bf16.h), where the CPU has AVX512-BF16
 * (vdpbf16ps) or arm64 FEAT_BF16 (bfmmla), on bf16 weights: two activation
 * terms within the fp32 GEMM's bound (each product off by at most 2^-17 of
 * it), one term within 2^-8 of each |x w| (<= 1 here); every token count
 * 1-40, k around the 32-column transposes, the 4-column bfmmla steps and
 * the 1024-column chunks (odd: a half pair, 1-3 columns past a step), rows
 * around the 8- and 16-row groups. */
static void test_bf16_dot_gemm_matches_reference(void) {
#if defined(__x86_64__)
    const cpu_gemm_kernels *gs = cpu_gemm_bf16_avx512;
    if (!cpu_features_get()->avx512bf16) {
        SKIP("no AVX512-BF16 on this CPU");
    }
#elif defined(__aarch64__)
    const cpu_gemm_kernels *gs = cpu_gemm_bf16_neon;
    if (!cpu_features_get()->bf16) {
        SKIP("no FEAT_BF16 on this CPU");
    }
#else
    const cpu_gemm_kernels *gs = NULL;
    SKIP("x86-64 and arm64 only");
#endif
    static const int ks[] = {1, 2, 3, 4, 5, 31, 32, 33, 64, 65, 1023, 1024, 1025, 1030, 2100};
    static const int rowss[] = {1, 7, 8, 9, 15, 16, 17, 33, 64};
    int cases = 0;
    for (int v = CPU_BF16_ACCURATE; v <= CPU_BF16_FAST; v++) {
        const cpu_gemm_kernels *g = &gs[v];
        const char *name = v == CPU_BF16_FAST ? "bf16 fast" : "bf16 accurate";
        double tol = v == CPU_BF16_FAST ? 1.0 / 256 : 1e-5;
        for (int n = 1; n <= 40; n++, cases++)
            CHECK(check_gemm_with(g, name, CPU_W_BF16, 37, n, 45, tol));
        for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
            for (size_t c = 0; c < sizeof rowss / sizeof *rowss; c++)
                for (int n = 1; n <= 25; n += 12, cases++)
                    CHECK(check_gemm_with(g, name, CPU_W_BF16, ks[a], n, rowss[c], tol));
    }
    printf("  %d cases\n", cases);
}

static void test_gemm_every_token_count_all_tables_all_types(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int t = 0; t < CPU_W_STORED_N; t++)
            for (int n = 1; n <= 40; n++, cases++)
                CHECK(check_gemm(tabs[ti], (cpu_wtype)t, 37, n, 45));
    printf("  %d tables, %d cases\n", nt, cases);
}

static void test_gemm_awkward_k_and_rows_all_tables_all_types(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    static const int ks[] = {1, 7, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257, 300, 530};
    static const int rowss[] = {1, 5, 8, 16, 31, 32, 33, 70};
    static const int ns[] = {1, 12, 13, 29};
    for (int ti = 0; ti < nt; ti++)
        for (int t = 0; t < CPU_W_STORED_N; t++)
            for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
                for (size_t c = 0; c < sizeof rowss / sizeof *rowss; c++)
                    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++, cases++)
                        CHECK(check_gemm(tabs[ti], (cpu_wtype)t, ks[a], ns[b], rowss[c]));
    /* large: two K blocks, two token chunks, rows past a 64-row task */
    for (int ti = 0; ti < nt; ti++)
        for (int t = 0; t < CPU_W_STORED_N; t++, cases++)
            CHECK(check_gemm(tabs[ti], (cpu_wtype)t, 1029, 250, 130));
    printf("  %d cases\n", cases);
}

/* cpu_matmul_act with panel scratch sends prompts (n >= 128 rows) to the
 * GEMMs on the thread pool: float weights, and Q8/Q4 on tables without an
 * int8 GEMM, to the fp32 one, whose result matches the fp32 product of the
 * dequantized weights far closer than int8 activations could (their
 * rounding alone is up to |w|/254 per weight); Q8/Q4 on tables with the
 * int8 GEMM within that rounding. */
static void test_matmul_act_prompts_use_the_gemms(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    const int k = 300, rows = 200, n = 130;
    nc_error err;
    nc_pool *pool;
    CHECK_OK(nc_pool_new(2, &pool, &err), &err);
    size_t pf = (size_t)CPU_MATMUL_PANEL_ROWS * k;
    float *panels = malloc(2 * pf * sizeof(float));
    float *wf = malloc(sizeof(float) * rows * k), *x = malloc(sizeof(float) * n * k);
    float *y = malloc(sizeof(float) * n * rows);
    int8_t *q = malloc(cpu_qact_q_bytes(n, k));
    float *s = malloc(cpu_qact_s_bytes(n, k));
    for (int i = 0; i < n * k; i++)
        x[i] = frand();
    for (int ti = 0; ti < nt; ti++)
        for (int t = 0; t < CPU_W_STORED_N; t++) {
            size_t ldw; /* unpadded rows, as a cpu_mat's */
            void *w = nc_test_stored_weights((cpu_wtype)t, rows, k, 0, frand_at, wf, &ldw);
            cpu_mat m = {(cpu_wtype)t, w, rows, k};
            cpu_act a = cpu_act_rows(x, (size_t)k, n, k, q, s);
            a.panels = panels;
            a.panel_floats = pf;
            cpu_matmul_act(pool, tabs[ti], &m, &a, y, (size_t)rows);
            int int8 = cpu_wtype_is_quant((cpu_wtype)t) && tabs[ti]->qpanel;
            double worst = 0; /* error over the bound */
            for (int b = 0; b < n; b++)
                for (int r = 0; r < rows; r++) {
                    double ref = 0, mag = 0;
                    for (int i = 0; i < k; i++) {
                        ref += (double)x[b * k + i] * wf[r * k + i];
                        mag += fabs((double)wf[r * k + i]);
                    }
                    /* |x| < 1: an int8 activation is off by at most 1/254 */
                    double bound = int8 ? mag / 254.0 + 1e-4 : 1e-5 * k;
                    worst = nc_worse(worst, fabs(y[b * rows + r] - ref) / bound);
                }
            if (worst > 1)
                printf("  %s %s: worst error %g of the bound\n", tabs[ti]->name,
                       cpu_wtype_name((cpu_wtype)t), worst);
            CHECK(worst <= 1);
            free(w);
        }
    nc_pool_free(pool);
    free(panels);
    free(wf);
    free(x);
    free(y);
    free(q);
    free(s);
}

/* The bf16 GEMMs that convert the activations once per product (x_prep,
 * run_x) through cpu_matmul_many on a pool: three products over one act,
 * then a second act over other rows in the same scratch (a conversion kept
 * from the first would be read for it), both contracts, every output
 * within the GEMM's bound of the double product (as in
 * test_bf16_dot_gemm_matches_reference); and an act whose scratch is too
 * small for its rows takes the converting run. */
static void test_bf16_gemm_converts_activations_once_per_act(void) {
#if defined(__x86_64__)
    if (!cpu_features_get()->avx512bf16) {
        SKIP("no AVX512-BF16 on this CPU");
    }
    const int k = 200, n = 40, rows[3] = {96, 64, 40};
    nc_error err;
    nc_pool *pool;
    CHECK_OK(nc_pool_new(2, &pool, &err), &err);
    size_t pf = (size_t)CPU_MATMUL_PANEL_ROWS * k;
    float *panels = malloc(2 * pf * sizeof(float));
    float *wf[3], *y[3], *x = malloc(sizeof(float) * 2 * n * k);
    void *w[3];
    for (int i = 0; i < 2 * n * k; i++)
        x[i] = frand();
    for (int p = 0; p < 3; p++) {
        size_t ldw;
        wf[p] = malloc(sizeof(float) * (size_t)rows[p] * k);
        w[p] = nc_test_stored_weights(CPU_W_BF16, rows[p], k, 0, frand_at, wf[p], &ldw);
        y[p] = malloc(sizeof(float) * (size_t)n * rows[p]);
    }
    for (int v = CPU_BF16_ACCURATE; v <= CPU_BF16_FAST; v++) {
        cpu_kernels kt = *cpu_kernels_get();
        kt.gemm_bf16 = &cpu_gemm_bf16_avx512[v];
        size_t xb_bytes = kt.gemm_bf16->x_bytes(n, k);
        void *xb = malloc(xb_bytes);
        double tol = v == CPU_BF16_FAST ? 1.0 / 256 : 1e-5;
        for (int round = 0; round < 3; round++) {
            /* rounds 0, 1: the two acts; 2: the first again, scratch short */
            const float *xr = x + (size_t)(round == 1) * n * k;
            cpu_act a = cpu_act_rows(xr, (size_t)k, n, k, NULL, NULL);
            a.panels = panels;
            a.panel_floats = pf;
            a.gemm_x = xb;
            a.gemm_x_bytes = round == 2 ? xb_bytes - 1 : xb_bytes;
            cpu_mat m[3];
            cpu_product prod[3];
            for (int p = 0; p < 3; p++) {
                m[p] = (cpu_mat){CPU_W_BF16, w[p], rows[p], k};
                prod[p] = (cpu_product){&m[p], y[p], (size_t)rows[p]};
            }
            cpu_matmul_many(pool, &kt, &a, 3, prod);
            CHECK((a.gemm_x_of == kt.gemm_bf16) == (round < 2));
            double worst = 0; /* error over the bound */
            for (int p = 0; p < 3; p++)
                for (int b = 0; b < n; b++)
                    for (int r = 0; r < rows[p]; r++) {
                        double ref = 0;
                        for (int i = 0; i < k; i++)
                            ref += (double)xr[b * k + i] * wf[p][r * k + i];
                        worst = nc_worse(worst, fabs(y[p][(size_t)b * rows[p] + r] - ref) /
                                                    (tol * (k + 1)));
                    }
            CHECKF(worst <= 1, "%s, act %d: worst error %g of the bound",
                   v == CPU_BF16_FAST ? "fast" : "accurate", round, worst);
        }
        free(xb);
    }
    for (int p = 0; p < 3; p++) {
        free(wf[p]);
        free(w[p]);
        free(y[p]);
    }
    nc_pool_free(pool);
    free(panels);
    free(x);
#else
    SKIP("x86-64 only");
#endif
}

/* cpu_matmul_reads_int8 says which products need quantized activations:
 * Q8/Q4 weights, unless the prompt is long enough for the fp32 GEMM and
 * there is panel scratch (tables with the int8 GEMM: always); never float
 * weights. */
static void test_reads_int8_only_for_short_quantized_products(void) {
    const cpu_kernels *kt = cpu_kernels_get();
    float panels[64 * 64];
    cpu_mat q8 = {CPU_W_Q8, NULL, 100, 64}, bf16 = {CPU_W_BF16, NULL, 100, 64};
    cpu_act shortp = cpu_act_rows(NULL, 64, 20, 64, NULL, NULL), longp = shortp;
    longp.n = 300;
    shortp.panels = longp.panels = panels;
    shortp.panel_floats = longp.panel_floats = sizeof panels / sizeof *panels;
    cpu_act no_scratch = longp;
    no_scratch.panels = NULL;
    CHECK(cpu_matmul_reads_int8(kt, &q8, &shortp));
    CHECK(cpu_matmul_reads_int8(kt, &q8, &longp) == (kt->qpanel != NULL));
    CHECK(cpu_matmul_reads_int8(kt, &q8, &no_scratch));
    CHECK(!cpu_matmul_reads_int8(kt, &bf16, &shortp));
    CHECK(!cpu_matmul_reads_int8(kt, &bf16, &longp));
}

/* Every table's row_to_f32 for every storage type, n = 1..67 values (every
 * vector tail; Q8/Q4 rows of partial blocks), against the exact fp32 values
 * of nc_test_stored_weights (the widened floats, cpu_dequantize_row for
 * Q8/Q4): equal, not close. */
static void test_row_conversion_all_tables_all_types(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    float wf[67], r[67];
    for (int ti = 0; ti < nt; ti++)
        for (int t = 0; t < CPU_W_STORED_N; t++)
            for (int n = 1; n <= 67; n++, cases++) {
                size_t ldw;
                void *w = nc_test_stored_weights((cpu_wtype)t, 1, n, 0, frand_at, wf, &ldw);
                tabs[ti]->row_to_f32[t](w, r, n);
                CHECKF(!memcmp(r, wf, (size_t)n * sizeof(float)), "%s %s n=%d", tabs[ti]->name,
                       cpu_wtype_name((cpu_wtype)t), n);
                free(w);
            }
    printf("  %d cases\n", cases);
}

/* The pool splits rows into tasks; with a NULL pool the same tasks run in
 * order. Either way every row is written once with the single-call value. */
static void test_threaded_matmul_split_matches_one_call(void) {
    const cpu_kernels *k = cpu_kernels_get();
    int rows = 1000, cols = 72;
    nc_bf16 *w = malloc(sizeof(nc_bf16) * rows * cols);
    float *wf = malloc(sizeof(float) * rows * cols), x[3 * 72], y1[3 * 1000], y2[3 * 1000];
    make_weights(CPU_W_BF16, w, wf, (size_t)rows * cols);
    for (int i = 0; i < 3 * cols; i++)
        x[i] = frand();
    cpu_mat m = {CPU_W_BF16, w, rows, cols};
    for (int n = 1; n <= 3; n += 2) {
        k->matmul[CPU_W_BF16](w, (size_t)cols, x, (size_t)cols, y1, (size_t)rows, n, cols, 0, rows);
        memset(y2, 0, sizeof y2);
        cpu_act a = cpu_act_rows(x, (size_t)cols, n, cols, NULL, NULL);
        cpu_matmul_act(NULL, k, &m, &a, y2, (size_t)rows);
        CHECK(!memcmp(y1, y2, sizeof(float) * (size_t)(n * rows)));
    }
    CHECK(cpu_mat_bytes(&m) == (size_t)rows * cols * 2);
    free(w);
    free(wf);
}

static void test_rope_pairs_i_with_i_plus_half(void) {
    /* head_dim 4, theta 10000: inv_freq = {1, 1/100}; at pos 1 element 0
     * pairs with element 2 (angle 1) and element 1 with 3 (angle 0.01). */
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    for (int ti = 0; ti < nt; ti++) {
        float inv[2], c[2], s[2], v[4] = {1, 2, 3, 4};
        cpu_rope_inv_freq(inv, 4, 10000.0f);
        CHECK(inv[0] == 1.0f && fabsf(inv[1] - 0.01f) < 1e-9f);
        cpu_rope_angles(c, s, inv, 4, 1);
        tabs[ti]->rows->rope(v, c, s, 4);
        CHECK_NEAR(v[0], 1 * cos(1.0) - 3 * sin(1.0), 1e-6);
        CHECK_NEAR(v[2], 3 * cos(1.0) + 1 * sin(1.0), 1e-6);
        CHECK_NEAR(v[1], 2 * cos(0.01) - 4 * sin(0.01), 1e-6);
        CHECK_NEAR(v[3], 4 * cos(0.01) + 2 * sin(0.01), 1e-6);
        cpu_rope_angles(c, s, inv, 4, 0); /* position 0 is the identity */
        float u[4] = {1, 2, 3, 4};
        tabs[ti]->rows->rope(u, c, s, 4);
        CHECK(u[0] == 1 && u[1] == 2 && u[2] == 3 && u[3] == 4);
    }
}

static void test_softmax_values(void) {
    float p[3] = {1000, 1001, 999}; /* max-subtracted: no overflow */
    cpu_softmax(p, 3);
    double e = 1 + exp(1) + exp(-1);
    CHECK_NEAR(p[1], exp(1) / e, 1e-6);
    CHECK_NEAR(p[0] + p[1] + p[2], 1.0, 1e-6);
}

static void test_no_simd_env_is_respected(void) {
    const char *v = getenv("NECTAR_NO_SIMD");
    if (v && *v && strcmp(v, "0"))
        CHECK(!strcmp(cpu_kernels_get()->name, "scalar"));
    else
        CHECK(cpu_kernels_get() != NULL);
}

int main(void) {
    RUN(test_matmul_all_tables_all_dtypes_awkward_sizes);
    RUN(test_row_conversion_all_tables_all_types);
    RUN(test_threaded_matmul_split_matches_one_call);
    RUN(test_gemm_every_token_count_all_tables_all_types);
    RUN(test_gemm_awkward_k_and_rows_all_tables_all_types);
    RUN(test_bf16_dot_gemm_matches_reference);
    RUN(test_matmul_act_prompts_use_the_gemms);
    RUN(test_bf16_gemm_converts_activations_once_per_act);
    RUN(test_reads_int8_only_for_short_quantized_products);
    RUN(test_rope_pairs_i_with_i_plus_half);
    RUN(test_softmax_values);
    RUN(test_no_simd_env_is_respected);
    return nc_test_exit_code();
}
