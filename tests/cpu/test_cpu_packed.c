/* Packed weights (cpu_packed.h): every kernel table that packs, the float
 * weight types (bf16 on AVX-512: the bf16 panels of gemm_bf16w.h, with
 * their prefetch from group to group), the bf16 dot-product GEMM where the
 * CPU has it, and the AMX tiles (weights in place, the same blocks and
 * epilogue), against
 * a double-precision product written here, on awkward sizes (rows not a
 * multiple of the 64-row groups or the panel blocks, k odd and past the
 * 1024-column chunks, token counts past the 132-token epilogue blocks and around the 12-row
 * activation tiles), in
 * one part and in two (a gated MLP's input and gate rows), on a 3-thread
 * pool; every output is handed to the epilogue exactly once. Also the
 * epilogue run over a product computed elsewhere (the unpacked path). */
#include <math.h>

#include "../common/weights.h"
#include "../test.h"
#include "base/half.h"
#include "base/pool.h"
#include "cpu/cpu_packed.h"
#include "cpu/cpu_scratch.h"
#include "cpu/gemm_bf16.h"
#include "cpu/gemm_bf16w.h"

static uint32_t rng = 7;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}
static float frand_at(int i) {
    (void)i;
    return frand();
}

/* The reference rounds the activations to bf16 first (the fast contract's
 * own product, to fp32 accuracy), where set. */
static int reference_rounds_x;

/* The epilogue under test: block outputs back into y[n][rows] in W's row
 * order, counting how often each is written. */
typedef struct {
    float *y;
    int *seen;
    int rows, part_rows;
} collect;

static void collect_block(void *ctx, const cpu_packed_block *b) {
    const collect *c = ctx;
    for (int t = 0; t < b->nt; t++)
        for (int q = 0; q < c->rows / c->part_rows; q++)
            for (int i = 0; i < b->rows; i++) {
                size_t at =
                    (size_t)(b->t0 + t) * (size_t)c->rows + (size_t)(q * c->part_rows + b->r0 + i);
                c->y[at] = b->y[(size_t)t * b->ldy + (size_t)q * b->part_off + (size_t)i];
                c->seen[at]++;
            }
}

/* One case: returns 0 and prints what differs on failure. */
static int check_packed(nc_pool *pool, const cpu_kernels *kern, const char *name, cpu_wtype t,
                        int rows, int k, int n, int parts) {
    size_t ldw;
    float *wf = malloc((size_t)rows * (size_t)k * sizeof(float));
    float *x = malloc((size_t)n * (size_t)(k + 5) * sizeof(float));
    float *y = calloc((size_t)n * (size_t)rows, sizeof(float));
    int *seen = calloc((size_t)n * (size_t)rows, sizeof(int));
    void *w = wf ? nc_test_stored_weights(t, rows, k, 0, frand_at, wf, &ldw) : NULL;
    int ok = wf && x && y && seen && w;
    cpu_packed p = {0};
    nc_error err = {0};
    if (ok) {
        size_t ldx = (size_t)k + 5;
        for (size_t i = 0; i < (size_t)n * ldx; i++)
            x[i] = frand();
        cpu_mat m = {t, w, rows, k};
        collect c = {y, seen, rows, rows / parts};
        if (kern->amx) { /* the tiles, weights in place, into a [n][rows] product */
            cpu_prompt_scratch ps = {0};
            float *raw = malloc((size_t)n * (size_t)rows * sizeof(float));
            ok = raw && cpu_prompt_scratch_reserve(&ps, kern, nc_pool_threads(pool), n, k, name,
                                                   &err) == NC_OK;
            cpu_act a = cpu_act_rows(x, ldx, n, k, NULL, NULL);
            cpu_act_attach(&a, &ps);
            if (ok && !cpu_packed_matmul_amx(pool, kern, &m, parts, &a, raw, (size_t)rows,
                                             collect_block, &c))
                ok = -1; /* too few rows for the tiles */
            cpu_prompt_scratch_free(&ps);
            free(raw);
        } else {
            ok = cpu_packed_init(&p, pool, kern, &m, parts, name, &err) == NC_OK;
            if (!ok) printf("  %s: %s\n", name, err.msg);
            float *scratch =
                malloc(cpu_packed_scratch_floats(nc_pool_threads(pool), n, k) * sizeof(float));
            if (ok && scratch) cpu_packed_matmul(pool, &p, x, ldx, n, collect_block, &c, scratch);
            free(scratch);
        }
        /* fp32 sums; bf16 dot products: each product within 2^-17; AMX: as
         * tests/cpu/test_gemm_amx.c, relative to sum |x w| */
        double tol = t == CPU_W_BF16 && kern->gemm_bf16 ? 1e-5 * k : 1e-5 * sqrt((double)k);
        if (kern->amx) tol = 4e-7 * sqrt((double)k) * k;
        /* NECTAR_BF16=fast: activations rounded to bf16, 2^-8 of each |x w| <= 1
         * (the packed panels of any bf16 dot-product table round them too) */
        int fast = t == CPU_W_BF16 && kern->gemm_bf16 && cpu_bf16_mode() == CPU_BF16_MODE_FAST;
#if defined(__x86_64__)
        fast |= t == CPU_W_BF16 && kern->gemm_bf16 == &cpu_gemm_bf16_avx512[CPU_BF16_FAST];
#elif defined(__aarch64__)
        fast |= t == CPU_W_BF16 && kern->gemm_bf16 == &cpu_gemm_bf16_neon[CPU_BF16_FAST];
#endif
        if (fast) tol = reference_rounds_x ? 1e-5 * k : k / 256.0;
        for (int tok = 0; ok == 1 && tok < n; tok++)
            for (int r = 0; ok && r < rows; r++) {
                double ref = 0;
                for (int i = 0; i < k; i++) {
                    float xi = x[(size_t)tok * ldx + (size_t)i];
                    if (reference_rounds_x) xi = nc_bf16_to_f32(nc_f32_to_bf16(xi));
                    ref += (double)xi * (double)wf[(size_t)r * (size_t)k + (size_t)i];
                }
                size_t at = (size_t)tok * (size_t)rows + (size_t)r;
                if (seen[at] != 1 || !(fabs(y[at] - ref) <= tol)) {
                    printf("  %s %s rows %d k %d n %d parts %d: y[%d][%d] = %g (seen %d), ref "
                           "%g\n",
                           name, cpu_wtype_name(t), rows, k, n, parts, tok, r, (double)y[at],
                           seen[at], ref);
                    ok = 0;
                }
            }
    }
    cpu_packed_free(&p);
    free(wf);
    free(x);
    free(y);
    free(seen);
    free(w);
    return ok != 0;
}

static void test_packed_products_all_tables_match_double_reference(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    nc_pool *pool;
    nc_error err = {0};
    CHECK_OK(nc_pool_new(3, &pool, &err), &err);
    static const int sizes[][3] = {/* rows, k, n */
                                   {74, 45, 131},  {64, 33, 8},   {130, 1030, 19},
                                   {2, 7, 129},    {198, 64, 1},  {40, 2100, 3},
                                   {34, 257, 133}, {64, 512, 12}, {96, 300, 264}};
    static const cpu_wtype types[] = {CPU_W_F32, CPU_W_F16, CPU_W_BF16};
    for (int ti = 0; ti < nt; ti++)
        for (size_t y = 0; y < sizeof types / sizeof *types; y++) {

            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                for (int parts = 1; parts <= 2; parts++, cases++)
                    if (!check_packed(pool, tabs[ti], tabs[ti]->name, types[y], sizes[s][0],
                                      sizes[s][1], sizes[s][2], parts)) {
                        nc_pool_free(pool);
                        CHECK(0);
                    }
        }
#if defined(__x86_64__)
    if (cpu_features_get()->avx512bf16) { /* the bf16 dot-product GEMM's panels */
        cpu_kernels bf = *tabs[nt - 1];
        bf.amx = 0;
        bf.gemm_bf16 = &cpu_gemm_bf16_avx512[CPU_BF16_ACCURATE];
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++, cases++)
            if (!check_packed(pool, &bf, "bf16 accurate", CPU_W_BF16, sizes[s][0], sizes[s][1],
                              sizes[s][2], 2)) {
                nc_pool_free(pool);
                CHECK(0);
            }
    }
#endif
    nc_pool_free(pool);
    printf("  %d cases\n", cases);
    CHECK(cases > 0);
}

/* Under NECTAR_BF16=fast, with the bf16 dot products chosen, the packed
 * panels run on them (gemm_bf16w_fast): the activations rounded to bf16
 * and nothing else, so the products equal a double-precision product of
 * the rounded activations to fp32 accuracy (k even; an odd k keeps the
 * dot-product GEMM's own panels). */
static void test_fast_contract_packs_dot_product_tiles(void) {
#if defined(__x86_64__)
    if (!cpu_features_get()->avx512bf16) {
        SKIP("no AVX512-BF16");
        return;
    }
    nc_error err = {0};
    nc_pool *pool;
    CHECK_OK(nc_pool_new(3, &pool, &err), &err);
    CHECK_OK(cpu_select_bf16("fast", &err), &err);
    cpu_kernels bf = cpu_kernels_avx512;
    bf.gemm_bf16 = &cpu_gemm_bf16_avx512[CPU_BF16_FAST];
    static const int sizes[][3] = {/* rows, k, n */
                                   {74, 46, 131}, {130, 1030, 19}, {40, 2100, 3},
                                   {96, 300, 264}, {64, 512, 12}, {34, 258, 25}};
    int ok = 1;
    reference_rounds_x = 1;
    CHECK(cpu_packed_wanted(&bf, CPU_W_BF16));
    for (size_t s = 0; ok && s < sizeof sizes / sizeof *sizes; s++)
        for (int parts = 1; ok && parts <= 2; parts++)
            ok = check_packed(pool, &bf, "fast tiles", CPU_W_BF16, sizes[s][0], sizes[s][1],
                              sizes[s][2], parts);
    /* the layout check: the packed matrix takes the dot-product tiles */
    uint16_t w[64 * 46] = {0};
    cpu_mat m = {CPU_W_BF16, w, 64, 46};
    cpu_packed p = {0};
    CHECK_OK(cpu_packed_init(&p, pool, &bf, &m, 1, "fast tiles", &err), &err);
    CHECK(p.w16 == &cpu_gemm_bf16w_fast_avx512 && cpu_packed_tiled(&p));
    cpu_packed_free(&p);
    m.cols = 45;
    CHECK_OK(cpu_packed_init(&p, pool, &bf, &m, 1, "fast tiles", &err), &err);
    CHECK(p.w16 == NULL && p.g == bf.gemm_bf16);
    cpu_packed_free(&p);
    reference_rounds_x = 0;
    CHECK_OK(cpu_select_bf16(getenv("NECTAR_BF16"), &err), &err);
    nc_pool_free(pool);
    CHECK(ok);
#else
    SKIP("x86-64 only");
#endif
}

static void test_only_bf16_weights_without_amx_are_packed(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    int fast = cpu_bf16_mode() == CPU_BF16_MODE_FAST;
    for (int ti = 0; ti < nt; ti++) {
        const cpu_kernels *k = tabs[ti];
        CHECK(!cpu_packed_wanted(k, CPU_W_Q8));
        CHECK(!cpu_packed_wanted(k, CPU_W_Q4));
        CHECK(!cpu_packed_wanted(k, CPU_W_F32));
        CHECK(cpu_packed_wanted(k, CPU_W_BF16) ==
              (!k->amx && (k->gemm_bf16 ? fast && k->gemm_bf16w_fast : k->gemm_bf16w != NULL)));
    }
}

/* cpu_packed_epilogue_rows hands over every output of a whole product
 * once, in the same blocks, parts side by side as in W's row order. */
static void test_epilogue_over_a_whole_product(void) {
    nc_pool *pool;
    nc_error err = {0};
    CHECK_OK(nc_pool_new(3, &pool, &err), &err);
    static const int sizes[][2] = {{74, 131}, {2, 1}, {200, 256}, {64, 129}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int parts = 1; parts <= 2; parts++) {
            int rows = sizes[s][0], n = sizes[s][1];
            size_t ld = (size_t)rows + 3, count = (size_t)n * (size_t)rows;
            float *src = malloc((size_t)n * ld * sizeof(float)), *y = calloc(count, sizeof(float));
            int *seen = calloc(count, sizeof(int)), ok = src && y && seen;
            for (size_t i = 0; ok && i < (size_t)n * ld; i++)
                src[i] = frand();
            collect c = {y, seen, rows, rows / parts};
            if (ok) cpu_packed_epilogue_rows(pool, src, ld, n, rows, parts, collect_block, &c);
            for (int t = 0; ok && t < n; t++)
                for (int r = 0; ok && r < rows; r++)
                    ok = seen[(size_t)t * (size_t)rows + (size_t)r] == 1 &&
                         y[(size_t)t * (size_t)rows + (size_t)r] == src[(size_t)t * ld + (size_t)r];
            free(src);
            free(y);
            free(seen);
            if (!ok) nc_pool_free(pool);
            CHECKF(ok, "rows %d n %d parts %d", rows, n, parts);
        }
    nc_pool_free(pool);
}

int main(void) {
    RUN(test_packed_products_all_tables_match_double_reference);
    RUN(test_fast_contract_packs_dot_product_tiles);
    RUN(test_only_bf16_weights_without_amx_are_packed);
    RUN(test_epilogue_over_a_whole_product);
    return nc_test_exit_code();
}
