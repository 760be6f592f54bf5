/* The bf16 dot-product decode kernels (gemv_bf16.h) against a double sum
 * over the same bf16 weights and the fp32 activations, every variant the
 * CPU can run: 3 terms (exact products, fp32 sums: within the fp32 tiles'
 * bound) and 1 term (activations rounded to bf16: within 2^-8 of each
 * |x w|). k around the 32-column steps and the K chunks of the stack
 * buffer (8192 columns for one row with 3 terms, 2048 for four rows), 1-9
 * activation rows (the 4-row tiles and their leftovers), row sub-ranges
 * with untouched neighbours, padded strides, and matrices whose last row
 * ends at an inaccessible page (the masked tail must not read past it).
 * Also: cpu_tune_force routes bf16 decoding through each variant. */
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test.h"
#include "base/half.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_wisdom.h"
#include "cpu/gemv_bf16.h"

static uint32_t rng = 7;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

/* rows x ldw bf16 weights; fenced: unpadded (ldw == k) and ending at an
 * inaccessible page. */
static nc_bf16 *weights_alloc(int rows, size_t ldw, int fenced, void **map, size_t *map_bytes) {
    size_t bytes = (size_t)rows * ldw * sizeof(nc_bf16);
    *map = NULL;
    if (!fenced) return malloc(bytes);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + page - 1) / page * page;
    *map_bytes = body + page;
    uint8_t *m = mmap(NULL, *map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    if (mprotect(m + body, page, PROT_NONE) != 0) {
        munmap(m, *map_bytes);
        return NULL;
    }
    *map = m;
    return (nc_bf16 *)(m + body - bytes);
}

/* One case: 1 if every output of rows [2, rows - 1) is within tolerance of
 * the double product and rows outside are untouched. */
static int check_case(cpu_matmul_fn fn, const char *name, int terms, int k, int n, int fenced) {
    const int rows = 13, r0 = 2, r1 = rows - 1;
    size_t ldw = fenced ? (size_t)k : (size_t)k + 3, ldx = (size_t)k + 5, ldy = rows + 4;
    void *map;
    size_t map_bytes = 0;
    nc_bf16 *w = weights_alloc(rows, ldw, fenced, &map, &map_bytes);
    float *x = malloc(sizeof(float) * (size_t)n * ldx), *y = malloc(sizeof(float) * n * ldy);
    if (!w || !x || !y) {
        printf("  out of memory\n");
        return 0;
    }
    for (size_t i = 0; i < (size_t)rows * ldw; i++)
        w[i] = nc_f32_to_bf16(frand());
    for (size_t i = 0; i < (size_t)n * ldx; i++)
        x[i] = frand();
    for (size_t i = 0; i < (size_t)n * ldy; i++)
        y[i] = 12345.0f;
    fn(w, ldw, x, ldx, y, ldy, n, k, r0, r1);
    int ok = 1;
    for (int t = 0; t < n && ok; t++)
        for (int r = 0; r < rows && ok; r++) {
            float got = y[(size_t)t * ldy + (size_t)r];
            double ref = 0, mag = 0;
            for (int i = 0; i < k; i++) {
                double p = (double)x[(size_t)t * ldx + (size_t)i] *
                           nc_bf16_to_f32(w[(size_t)r * ldw + (size_t)i]);
                ref += p;
                mag += fabs(p);
            }
            /* 3 terms: exact products, fp32 sums (as the fp32 tiles); 1
             * term: each product within 2^-8 of |x w| */
            double tol = terms == 3 ? 1e-5 * (k + 1) : mag / 256 + 1e-5 * (k + 1);
            ok = r < r0 || r >= r1 ? got == 12345.0f : fabs(got - ref) <= tol;
            if (!ok)
                printf("  %s k=%d n=%d%s row %d tok %d: got %.9g want %.9g (tol %.3g)\n", name, k,
                       n, fenced ? " fenced" : "", r, t, got, ref, tol);
        }
    if (map)
        munmap(map, map_bytes);
    else
        free(w);
    free(x);
    free(y);
    return ok;
}

static void test_every_variant_matches_double_sums(void) {
#if defined(__x86_64__)
    if (!cpu_features_get()->avx512bf16) SKIP("no AVX512-BF16 on this CPU");
    static const int ks[] = {1,    2,    3,    31,   32,   33,   63,   64,   100, 1023,
                             1024, 1025, 2047, 2048, 2049, 8191, 8192, 8193, 9000};
    int cases = 0;
    for (int v = 0; v < cpu_gemv_bf16_avx512_count; v++) {
        const cpu_gemv_bf16 *g = &cpu_gemv_bf16_avx512[v];
        for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
            for (int n = 1; n <= 9; n += ks[a] > 2100 ? 4 : 1)
                for (int fenced = 0; fenced <= 1; fenced++, cases++)
                    CHECK(check_case(g->fn, g->name, g->terms, ks[a], n, fenced));
    }
    printf("  %d variants, %d cases\n", cpu_gemv_bf16_avx512_count, cases);
#else
    SKIP("x86-64 only");
#endif
}

/* The 3-term split is exact: with activations and weights whose products
 * and sums are exact in fp32 (small integers x 2^-12 and 2^-10 plus bits
 * below bf16's 8), the result equals the exact sum. */
static void test_three_terms_are_exact(void) {
#if defined(__x86_64__)
    if (!cpu_features_get()->avx512bf16) SKIP("no AVX512-BF16 on this CPU");
    const int k = 96, rows = 8;
    nc_bf16 w[8 * 96];
    float x[96], y[8];
    for (int i = 0; i < rows * k; i++)
        w[i] = nc_f32_to_bf16((float)((i * 37) % 255 - 127) / 1024.0f); /* 8 bits: exact */
    for (int i = 0; i < k; i++)
        x[i] = (float)((i * 7919) % 8191 - 4095) / 4096.0f + (float)(i % 3) / (1 << 20);
    for (int v = 0; v < cpu_gemv_bf16_avx512_count; v++) {
        if (cpu_gemv_bf16_avx512[v].terms != 3) continue;
        cpu_gemv_bf16_avx512[v].fn(w, k, x, k, y, 1, 1, k, 0, rows);
        for (int r = 0; r < rows; r++) {
            double ref = 0;
            for (int i = 0; i < k; i++)
                ref += (double)x[i] * nc_bf16_to_f32(w[r * k + i]);
            CHECKF(fabs(y[r] - ref) <= 1e-6 * fabs(ref) + 1e-9, "%s row %d: %.9g vs %.9g",
                   cpu_gemv_bf16_avx512[v].name, r, y[r], ref);
        }
    }
#else
    SKIP("x86-64 only");
#endif
}

/* cpu_tune_force puts each candidate into the table's bf16 entry, and an
 * unknown name is refused with the list. */
static void test_force_routes_the_table(void) {
    const char *names[CPU_WISDOM_MAX_CANDIDATES];
    nc_error err;
    CHECK_OK(cpu_select_bf16("fast", &err), &err);
    int n = cpu_tune_candidates(CPU_SLOT_DECODE_BF16, names, CPU_WISDOM_MAX_CANDIDATES);
    CHECK(n >= 1);
    for (int i = 0; i < n; i++) {
        CHECK_OK(cpu_tune_force(CPU_SLOT_DECODE_BF16, names[i], &err), &err);
        CHECK(check_case(cpu_kernels_get()->matmul[CPU_W_BF16], names[i],
                         strstr(names[i], "dp1") ? 1 : 3, 100, 3, 0));
    }
    CHECK(cpu_tune_force(CPU_SLOT_DECODE_BF16, "no-such-kernel", &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "no-such-kernel") && strstr(err.msg, names[0]));
    CHECK_OK(cpu_select_bf16(NULL, &err), &err);
    printf("  %d decode candidates in the fast contract\n", n);
}

int main(void) {
    RUN(test_every_variant_matches_double_sums);
    RUN(test_three_terms_are_exact);
    RUN(test_force_routes_the_table);
    return nc_test_exit_code();
}
