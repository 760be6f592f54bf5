/* The read-bandwidth probe (cpu_membw.h) with the bf16 decode kernels as
 * patterns (cpu_wisdom.h): the ceiling is the fastest of every pattern it
 * names, the kernels are all there, and a kernel pass reads Qwen3-0.6B's
 * layer products in order, as far as whole products of >= 16 rows fit and
 * no further (the buffer is allocated to its exact size, so ASan sees a
 * read past it). */
#include <string.h>

#include "../test.h"
#include "base/alloc.h"
#include "base/half.h"
#include "base/pool.h"
#include "cpu/cpu_membw.h"
#include "cpu/cpu_wisdom.h"

static nc_pool *pool;

static void test_ceiling_is_the_fastest_named_pattern(void) {
    cpu_membw bw;
    double best = cpu_read_bandwidth(pool, (size_t)8 << 20, 2, &bw);
    const char *kernels[CPU_MEMBW_KERNEL_PATTERNS];
    int n_kernels = cpu_decode_stream_kernels(kernels, CPU_MEMBW_KERNEL_PATTERNS);
    CHECK(best > 0 && best == bw.best);
    CHECK(n_kernels >= 1); /* fp32-widen on every table */
    CHECKF(bw.n_patterns == CPU_MEMBW_PLAIN_PATTERNS + n_kernels ||
               bw.n_patterns == CPU_MEMBW_PLAIN_PATTERNS / 2 + n_kernels,
           "%d patterns, %d kernels", bw.n_patterns, n_kernels);
    double max = 0;
    int at = -1;
    for (int p = 0; p < bw.n_patterns; p++) {
        CHECKF(bw.best_of[p] > 0, "pattern %s read nothing", bw.name[p]);
        if (bw.best_of[p] > max) max = bw.best_of[p], at = p;
    }
    CHECK(max == best && !strcmp(bw.pattern, bw.name[at]));
    for (int i = 0; i < n_kernels; i++) {
        char want[CPU_MEMBW_NAME];
        snprintf(want, sizeof want, "decode kernel %s, a layer's products", kernels[i]);
        CHECKF(!strncmp(bw.name[bw.n_patterns - n_kernels + i], want, strlen(want)),
               "pattern %s, want %s", bw.name[bw.n_patterns - n_kernels + i], want);
    }
    CHECK(bw.per_cpu_s > 0 && bw.pattern_per_cpu_s[0]);
    /* each round's fastest pass, the best of them the figure */
    CHECK(bw.runs_n == 2 && bw.runs[0] > 0 && bw.runs[1] > 0);
    CHECK((bw.runs[0] > bw.runs[1] ? bw.runs[0] : bw.runs[1]) == best);
}

/* The probe in steps (bench's rounds after each tg run): a round returns
 * its own fastest pass and folds it into the totals. */
static void test_rounds_fold_into_the_totals(void) {
    cpu_membw bw;
    cpu_membw_probe *pr = cpu_membw_open((size_t)4 << 20, &bw);
    CHECK(pr != NULL && bw.n_patterns > 0 && bw.runs_n == 0 && bw.best == 0);
    double a = cpu_membw_round(pr, pool, &bw), b = cpu_membw_round(pr, pool, &bw);
    cpu_membw_close(pr);
    CHECK(a > 0 && b > 0 && bw.runs_n == 2 && bw.runs[0] == a && bw.runs[1] == b);
    CHECK(bw.best == (a > b ? a : b));
    cpu_membw_close(NULL);
}

/* Bytes a pass reads of a buffer of `bytes`. */
static size_t pass_over(int kernel, size_t bytes) {
    nc_bf16 *w = nc_alloc_aligned(bytes);
    if (!w) return (size_t)-1;
    for (size_t i = 0; i < bytes / sizeof *w; i++)
        w[i] = nc_f32_to_bf16((float)(int)(i % 13) * 0.01f - 0.06f);
    size_t read = cpu_decode_stream(pool, kernel, w, bytes);
    nc_free_aligned(w);
    return read;
}

static void test_kernel_pass_reads_whole_products_in_order(void) {
    const size_t mib = (size_t)1 << 20;
    const char *kernels[CPU_MEMBW_KERNEL_PATTERNS];
    int n = cpu_decode_stream_kernels(kernels, CPU_MEMBW_KERNEL_PATTERNS);
    for (int k = 0; k < n; k++) {
        /* q (2048 x 1024), k and v (1024 x 1024 each): 8 MiB of bf16 */
        CHECKF(pass_over(k, 8 * mib) == 8 * mib, "%s", kernels[k]);
        /* then o (1024 x 2048, 4 KiB rows): 15 rows are too few */
        CHECKF(pass_over(k, 8 * mib + 15 * 4096) == 8 * mib, "%s", kernels[k]);
        /* 256 of its rows */
        CHECKF(pass_over(k, 9 * mib) == 9 * mib, "%s", kernels[k]);
    }
    CHECK(cpu_decode_stream(pool, -1, NULL, 0) == 0);
    CHECK(cpu_decode_stream(pool, n, NULL, 0) == 0);
}

/* The 32-byte-load sum against a word-by-word one, over lengths with and
 * without a tail (which it leaves out): on AVX2 normally, on the portable
 * loop under NECTAR_NO_SIMD=1 (tests/cpu/test_no_simd.sh). */
static void test_sum_32_adds_whole_groups_of_16_words(void) {
    enum { WORDS = 4096 };
    uint64_t *w = nc_alloc_aligned(WORDS * sizeof *w);
    CHECK(w != NULL);
    if (!w) return;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < WORDS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        w[i] = x;
    }
    const size_t lengths[] = {0, 15, 16, 17, 31, 32, 48, 1000, 4080, 4095, 4096};
    for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
        size_t n = lengths[l];
        uint64_t want = 0;
        for (size_t i = 0; i < n / 16 * 16; i++)
            want += w[i];
        CHECKF(cpu_membw_sum_32(w, n) == want, "%zu words", n);
    }
    nc_free_aligned(w);
}

int main(void) {
    nc_error err;
    if (nc_pool_new(2, &pool, &err) != NC_OK) {
        printf("FAIL pool: %s\n", err.msg);
        return 1;
    }
    RUN(test_ceiling_is_the_fastest_named_pattern);
    RUN(test_kernel_pass_reads_whole_products_in_order);
    RUN(test_rounds_fold_into_the_totals);
    RUN(test_sum_32_adds_whole_groups_of_16_words);
    nc_pool_free(pool);
    return nc_test_exit_code();
}
