/* The prompt GEMM (cpu_gemm_kernels: pack a task's weight rows into fp32
 * panels, then the outer-product microkernel) of every kernel table, for
 * every weight type including Q8/Q4, against a double-precision product of
 * the exactly widened / dequantized weights, on awkward sizes: token counts
 * 1..40 (every leftover tile height), rows not a multiple of the panel
 * block, k not a multiple of the vector width or the K block, padded
 * strides; and cpu_matmul_act's routing of prompts onto it. */
#include <math.h>

#include "../test.h"
#include "base/half.h"
#include "base/pool.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_quant.h"

static uint32_t rng = 7;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

/* rows x k weights stored as type t (row stride *ldw_bytes) and their exact
 * fp32 values wf [rows][k] (for Q8/Q4: cpu_dequantize_row of the stored row). */
static void *make_weights(cpu_wtype t, int rows, int k, float *wf, size_t *ldw_bytes) {
    size_t pad = cpu_wtype_is_quant(t) ? 0 : 3 * cpu_wtype_size(t); /* padded row stride */
    size_t ld = cpu_wtype_row_bytes(t, k) + pad;
    unsigned char *w = malloc(ld * (size_t)rows + 1);
    float *src = malloc(sizeof(float) * (size_t)k);
    for (int r = 0; r < rows; r++) {
        unsigned char *row = w + (size_t)r * ld;
        for (int i = 0; i < k; i++)
            src[i] = frand();
        if (cpu_wtype_is_quant(t)) {
            cpu_quantize_weight_row(t, src, k, row);
            cpu_dequantize_row(t, row, wf + (size_t)r * k, k);
            continue;
        }
        for (int i = 0; i < k; i++) {
            float v = src[i];
            if (t == CPU_W_F32) ((float *)row)[i] = v;
            if (t == CPU_W_F16) v = nc_fp16_to_f32(((nc_fp16 *)row)[i] = nc_f32_to_fp16(v));
            if (t == CPU_W_BF16) v = nc_bf16_to_f32(((nc_bf16 *)row)[i] = nc_f32_to_bf16(v));
            wf[(size_t)r * k + i] = v;
        }
    }
    free(src);
    *ldw_bytes = ld;
    return w;
}

/* Packs rows r0..r0+rows of a (r0 + rows + 2)-row matrix and runs n tokens
 * into a padded y; every output within 1e-5 * (k + 1) of the double product
 * and every padding cell untouched. Returns 0 and prints the case if not. */
static int check_gemm(const cpu_kernels *kt, cpu_wtype t, int k, int n, int rows) {
    const int r0 = 3, all_rows = r0 + rows + 2, ldx = k + 5, ldy = all_rows + 4;
    float *wf = malloc(sizeof(float) * (size_t)all_rows * k);
    size_t ldw;
    void *w = make_weights(t, all_rows, k, wf, &ldw);
    float *x = malloc(sizeof(float) * (size_t)n * ldx);
    float *y = malloc(sizeof(float) * (size_t)n * ldy);
    float *panel = malloc(sizeof(float) * cpu_gemm_panel_floats(&kt->gemm, rows, k));
    for (int i = 0; i < n * ldx; i++)
        x[i] = frand();
    for (int i = 0; i < n * ldy; i++)
        y[i] = 12345.0f;
    kt->gemm.pack(t, w, ldw, k, r0, r0 + rows, panel);
    kt->gemm.run(panel, k, rows, x, (size_t)ldx, y + r0, (size_t)ldy, n);
    int ok = 1;
    for (int b = 0; b < n && ok; b++)
        for (int r = 0; r < ldy && ok; r++) {
            float got = y[(size_t)b * ldy + r];
            if (r < r0 || r >= r0 + rows) {
                ok = got == 12345.0f;
            } else {
                double ref = 0;
                for (int i = 0; i < k; i++)
                    ref += (double)x[(size_t)b * ldx + i] * wf[(size_t)r * k + i];
                ok = fabs(got - ref) <= 1e-5 * (k + 1);
            }
            if (!ok)
                printf("  %s %s k=%d n=%d rows=%d: token %d row %d got %g\n", kt->name,
                       cpu_wtype_name(t), k, n, rows, b, r, got);
        }
    free(wf);
    free(w);
    free(x);
    free(y);
    free(panel);
    return ok;
}

static void test_gemm_every_token_count_all_tables_all_types(void) {
    const cpu_kernels *tabs[4];
    int nt = cpu_kernels_available(tabs, 4), cases = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int t = 0; t < CPU_W_N; t++)
            for (int n = 1; n <= 40; n++, cases++)
                CHECK(check_gemm(tabs[ti], (cpu_wtype)t, 37, n, 45));
    printf("  %d tables, %d cases\n", nt, cases);
}

static void test_gemm_awkward_k_and_rows_all_tables_all_types(void) {
    const cpu_kernels *tabs[4];
    int nt = cpu_kernels_available(tabs, 4), cases = 0;
    static const int ks[] = {1, 7, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257, 300, 530};
    static const int rowss[] = {1, 5, 8, 16, 31, 32, 33, 70};
    static const int ns[] = {1, 12, 13, 29};
    for (int ti = 0; ti < nt; ti++)
        for (int t = 0; t < CPU_W_N; t++)
            for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
                for (size_t c = 0; c < sizeof rowss / sizeof *rowss; c++)
                    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++, cases++)
                        CHECK(check_gemm(tabs[ti], (cpu_wtype)t, ks[a], ns[b], rowss[c]));
    /* large: two K blocks, two token chunks, rows past a 64-row task */
    for (int ti = 0; ti < nt; ti++)
        for (int t = 0; t < CPU_W_N; t++, cases++)
            CHECK(check_gemm(tabs[ti], (cpu_wtype)t, 1029, 250, 130));
    printf("  %d cases\n", cases);
}

/* cpu_matmul_act with panel scratch sends prompts (n >= 128 rows) of every
 * weight type to the GEMM on the thread pool: the result matches the fp32
 * product of the dequantized weights far closer than int8 activations could
 * (their rounding alone is up to |w|/254 per weight), for each table. */
static void test_matmul_act_prompts_use_fp32_gemm(void) {
    const cpu_kernels *tabs[4];
    int nt = cpu_kernels_available(tabs, 4);
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
        for (int t = 0; t < CPU_W_N; t++) {
            size_t ldw;
            void *w = make_weights((cpu_wtype)t, rows, k, wf, &ldw);
            if (ldw != cpu_wtype_row_bytes((cpu_wtype)t, k)) { /* cpu_mat rows are unpadded */
                free(w);
                continue;
            }
            cpu_mat m = {(cpu_wtype)t, w, rows, k};
            cpu_act a = cpu_act_rows(x, (size_t)k, n, k, q, s);
            a.panels = panels;
            a.panel_floats = pf;
            cpu_matmul_act(pool, tabs[ti], &m, &a, y, (size_t)rows);
            double worst = 0;
            for (int b = 0; b < n; b++)
                for (int r = 0; r < rows; r++) {
                    double ref = 0;
                    for (int i = 0; i < k; i++)
                        ref += (double)x[b * k + i] * wf[r * k + i];
                    worst = fmax(worst, fabs(y[b * rows + r] - ref));
                }
            if (worst > 1e-5 * k)
                printf("  %s %s: worst error %g\n", tabs[ti]->name, cpu_wtype_name((cpu_wtype)t),
                       worst);
            CHECK(worst <= 1e-5 * k);
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

/* cpu_matmul_reads_int8 says which products need quantized activations:
 * Q8/Q4 weights, unless the prompt is long enough for the GEMM and there is
 * panel scratch; never float weights. */
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
    CHECK(!cpu_matmul_reads_int8(kt, &q8, &longp));
    CHECK(cpu_matmul_reads_int8(kt, &q8, &no_scratch));
    CHECK(!cpu_matmul_reads_int8(kt, &bf16, &shortp));
    CHECK(!cpu_matmul_reads_int8(kt, &bf16, &longp));
}

int main(void) {
    RUN(test_gemm_every_token_count_all_tables_all_types);
    RUN(test_gemm_awkward_k_and_rows_all_tables_all_types);
    RUN(test_matmul_act_prompts_use_fp32_gemm);
    RUN(test_reads_int8_only_for_short_quantized_products);
    return nc_test_exit_code();
}
