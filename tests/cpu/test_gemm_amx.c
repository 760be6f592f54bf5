/* The AMX prompt product against a double-precision reference written
 * here, for every weight type (Q8/Q4 through their own dequantization), on
 * awkward sizes: k not a multiple of the 32-wide tile, row counts around the
 * 16-row tiles and the 64-row scratch, token counts around 16, sub-ranges of
 * rows and padded strides. Float weights must come out at fp32 accuracy (the
 * bf16 term split is exact); Q8/Q4 within the dropped terms' 2.5 * 2^-17. Skips
 * where the CPU or OS has no AMX. */
#include <math.h>
#include <stdlib.h>

#include "../common/weights.h"
#include "../test.h"
#include "base/alloc.h"
#include "base/half.h"
#include "cpu/cpu_quant.h"
#include "cpu/gemm_amx.h"

static uint32_t rng = 7;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

/* Weights with every fifth column four times larger (wider exponents). */
static float weight_at(int i) {
    return frand() * (i % 5 == 0 ? 4.0f : 1.0f);
}

static int check_case(cpu_wtype t, int rows, int k, int n, int r0, int r1) {
    size_t ldw;
    size_t ldx = (size_t)k + 3, ldy = (size_t)rows + 5;
    float *wf = malloc((size_t)rows * k * sizeof *wf);
    uint8_t *w = nc_test_stored_weights(t, rows, k, t == CPU_W_F32 ? 1 : 0, weight_at, wf, &ldw);
    float *x = malloc((size_t)n * ldx * sizeof *x);
    float *y = malloc((size_t)n * ldy * sizeof *y);
    void *xp = nc_alloc_aligned(cpu_amx_x_bytes(n, k));
    void *scratch = nc_alloc_aligned(cpu_amx_scratch_bytes(k));
    for (size_t i = 0; i < (size_t)n * ldx; i++)
        x[i] = frand() * (i % 7 == 0 ? 30.0f : 1.0f);
    for (size_t i = 0; i < (size_t)n * ldy; i++)
        y[i] = -12345.0f;
    for (int tb = 0; tb < cpu_amx_token_blocks(n); tb++)
        cpu_amx_pack_x(x, ldx, n, k, tb, xp);
    /* the converter of the chosen table, as the amx table passes its own */
    cpu_amx_matmul(t, cpu_kernels_get()->row_to_f32[t], w, ldw, k, r0, r1, xp, n, y, ldy, scratch);
    /* fp32 accumulation over k terms: a few ulps of sum |x w|; Q8/Q4 drop
     * x's third term, w's third term and the product of the second terms
     * (each term rounded to nearest: at most 2.5 * 2^-17 of each product). */
    double rel = cpu_wtype_is_quant(t) ? 2.5 * 0x1p-17 : 4e-7 * sqrt((double)k);
    int bad = 0;
    for (int tok = 0; tok < n; tok++)
        for (int r = 0; r < rows + 5; r++) {
            float got = y[(size_t)tok * ldy + r];
            if (r < r0 || r >= r1) { /* outside the range: untouched */
                bad += got != -12345.0f;
                continue;
            }
            double ref = 0, mag = 0;
            for (int i = 0; i < k; i++) {
                double p = (double)x[(size_t)tok * ldx + i] * wf[(size_t)r * k + i];
                ref += p;
                mag += fabs(p);
            }
            if (fabs(got - ref) > rel * mag + 1e-30) {
                if (!bad)
                    fprintf(stderr, "  %s rows=%d k=%d n=%d [%d,%d): y[%d][%d] = %.9g, want %.9g\n",
                            cpu_wtype_name(t), rows, k, n, r0, r1, tok, r, got, ref);
                bad++;
            }
        }
    free(w);
    free(wf);
    free(x);
    free(y);
    nc_free_aligned(xp);
    nc_free_aligned(scratch);
    return bad;
}

static void test_amx_matches_double_reference_all_types(void) {
    if (!cpu_amx_available()) {
        SKIP("no AMX-BF16 on this CPU/OS");
        return;
    }
    static const int ks[] = {32, 40, 64, 100, 1024};
    static const int ns[] = {1, 5, 16, 17, 33, 70};
    static const int rowss[] = {1, 15, 16, 17, 32, 33, 64, 100, 130};
    int cases = 0;
    for (int t = CPU_W_F32; t < CPU_W_STORED_N; t++)
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
                for (size_t ri = 0; ri < sizeof rowss / sizeof *rowss; ri++) {
                    int rows = rowss[ri], k = ks[ki], n = ns[ni];
                    if (k == 1024 && (rows > 33 || n > 17)) continue; /* keep it fast */
                    CHECKF(check_case((cpu_wtype)t, rows, k, n, 0, rows) == 0,
                           "%s rows=%d k=%d n=%d", cpu_wtype_name((cpu_wtype)t), rows, k, n);
                    if (rows > 20)
                        CHECKF(check_case((cpu_wtype)t, rows, k, n, 3, rows - 1) == 0,
                               "%s rows=%d k=%d n=%d sub-range", cpu_wtype_name((cpu_wtype)t), rows,
                               k, n);
                    cases++;
                }
    CHECK(cases > 500);
}

int main(void) {
    RUN(test_amx_matches_double_reference_all_types);
    return nc_test_exit_code();
}
