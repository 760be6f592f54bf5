/* Read-bandwidth probe (see cpu_membw.h). Each task sums its part so the
 * reads cannot be optimised away. Several patterns, because which one a
 * CPU streams fastest depends on its load width, its prefetchers and on
 * how the threads' streams interleave: 8-byte words, 32-byte loads (AVX2
 * where there is, else the compiler's vectors) or whole 64-byte lines,
 * with or without software prefetch, in 4 MiB slices handed out to
 * whichever thread is free (threads interleave through the buffer) or one
 * contiguous part per thread; and on 4 KiB pages or, where the system has
 * them, 2 MiB pages (the engine reads a model's weights onto those:
 * io/weights_residency.h; streaming them beat the 4 KiB probe by up to
 * 1.5x on a Zen 5 VM); and the bf16 decode kernels themselves, which read
 * a GEMV's rows with their own prefetch distances and out-read every plain
 * loop there. The ceiling is the fastest. */
#include "cpu/cpu_membw.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/alloc.h"
#include "base/timer.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_wisdom.h"

#define SLICE_BYTES ((size_t)1 << 22)
/* Software prefetch distance of the *-pf patterns. */
#define PREFETCH_BYTES 1024

typedef uint64_t line64 __attribute__((vector_size(64)));
typedef uint64_t half64 __attribute__((vector_size(32)));

/* How a pattern reads its words. */
enum { READ_WORDS, READ_32, READ_LINES };

typedef struct {
    const uint64_t *buf;
    size_t n_words;
    size_t words_per_task;
    int reads, prefetch;
    uint64_t sums[256];
    double cpu_s[256]; /* CPU time each thread spent reading */
} bw_job;

static double thread_cpu_s(void) {
    struct timespec t;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 ? (double)t.tv_sec + t.tv_nsec * 1e-9
                                                           : 0.0;
}

static uint64_t sum_words(const uint64_t *p, size_t n) {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    return a + b + c + d;
}

/* Whole lines, two independent sums; p 64-byte aligned. */
static uint64_t sum_lines(const uint64_t *p, size_t n, int prefetch) {
    const line64 *l = (const line64 *)p;
    size_t nl = n / 8;
    line64 a = {0}, b = {0};
    for (size_t i = 0; i + 2 <= nl; i += 2) {
        if (prefetch) __builtin_prefetch((const char *)(l + i) + PREFETCH_BYTES);
        a += l[i];
        b += l[i + 1];
    }
    a += b;
    uint64_t s = 0;
    for (int i = 0; i < 8; i++)
        s += a[i];
    return s;
}

/* 32 bytes per load, four independent sums; p 64-byte aligned. AVX2
 * where the kernel table in use is AVX2 or wider (not under
 * NECTAR_NO_SIMD, so the portable loop below is tested too). */
uint64_t cpu_membw_sum_32(const uint64_t *p, size_t n) {
#if defined(__x86_64__) || defined(_M_X64)
    if (cpu_features_get()->avx2 && cpu_kernels_get() != &cpu_kernels_scalar)
        return cpu_membw_sum_avx2(p, n);
#endif
    const half64 *h = (const half64 *)p;
    size_t nh = n / 4;
    half64 a = {0}, b = {0}, c = {0}, d = {0};
    for (size_t i = 0; i + 4 <= nh; i += 4) {
        a += h[i];
        b += h[i + 1];
        c += h[i + 2];
        d += h[i + 3];
    }
    a += b + c + d;
    return a[0] + a[1] + a[2] + a[3];
}

static void read_part(void *ctx, int task, int thread) {
    bw_job *j = ctx;
    double c0 = thread_cpu_s();
    size_t w0 = (size_t)task * j->words_per_task, w1 = w0 + j->words_per_task;
    if (w1 > j->n_words) w1 = j->n_words;
    uint64_t s = w1 <= w0                ? 0
                 : j->reads == READ_LINES ? sum_lines(j->buf + w0, w1 - w0, j->prefetch)
                 : j->reads == READ_32    ? cpu_membw_sum_32(j->buf + w0, w1 - w0)
                                          : sum_words(j->buf + w0, w1 - w0);
    j->sums[thread & 255] += s;
    j->cpu_s[thread & 255] += thread_cpu_s() - c0;
}

/* The plain patterns on 4 KiB pages; the probe runs each again on 2 MiB
 * pages (pattern p >= PER_PAGE_SIZE: patterns[p - PER_PAGE_SIZE]). */
#define PER_PAGE_SIZE (CPU_MEMBW_PLAIN_PATTERNS / 2)
static const struct {
    const char *name;
    int reads, prefetch, halves;
} patterns[PER_PAGE_SIZE] = {
    {"words, 4 MiB slices", READ_WORDS, 0, 0},
    {"32-byte loads, 4 MiB slices", READ_32, 0, 0},
    {"lines, 4 MiB slices", READ_LINES, 0, 0},
    {"lines + prefetch, 4 MiB slices", READ_LINES, 1, 0},
    {"lines, a part per thread", READ_LINES, 0, 1},
    {"lines + prefetch, a part per thread", READ_LINES, 1, 1},
};

/* The probe's bytes: bf16 weights near 0.0115 (0x3c3c, a normal number, so
 * a decode kernel meets no subnormal products), each page different from
 * the others (a hypervisor that merges identical pages, or a memory that
 * compresses them, must not serve the reads from one page). */
static void fill_distinct(uint64_t *w, size_t n_words) {
    for (size_t i = 0; i < n_words; i++)
        w[i] = 0x3c3c3c3c3c3c3c3cull ^ (uint64_t)(i & 0x3f) ^ (uint64_t)((i >> 6) & 0x3f) << 16 ^
               (uint64_t)((i >> 12) & 0x3f) << 32 ^ (uint64_t)((i >> 18) & 0x3f) << 48;
}

/* The buffer on 4 KiB pages (as a mmapped file is), filled. */
static uint64_t *small_pages(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#if defined(MADV_NOHUGEPAGE)
    madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
    fill_distinct(p, bytes / 8);
    return p;
}

/* One timed pass of plain pattern p over buf: bytes/s of wall time, and
 * bytes per CPU-second of the reading threads in *per_cpu. */
static double plain_pass(nc_pool *pool, int p, const uint64_t *buf, size_t n_words,
                         double *per_cpu) {
    static bw_job j; /* 4 KiB of sums: off the stack */
    int threads = nc_pool_threads(pool);
    memset(&j, 0, sizeof j);
    j.n_words = n_words;
    j.buf = buf;
    p %= PER_PAGE_SIZE;
    j.reads = patterns[p].reads;
    j.prefetch = patterns[p].prefetch;
    /* a part per thread: whole lines, the last part the rest */
    j.words_per_task = patterns[p].halves
                           ? (n_words / 8 + (size_t)threads - 1) / (size_t)threads * 8
                           : SLICE_BYTES / 8;
    int tasks = (int)((n_words + j.words_per_task - 1) / j.words_per_task);
    double t0 = nc_now_s();
    nc_pool_for(pool, tasks, read_part, &j);
    double dt = nc_now_s() - t0, c = 0;
    for (int i = 0; i < threads && i < 256; i++)
        c += j.cpu_s[i];
    *per_cpu = c > 0 ? (double)(n_words * 8) / c : 0.0;
    return dt > 0 ? (double)(n_words * 8) / dt : 0.0;
}

/* One timed pass of bf16 decode kernel k over buf (as plain_pass). */
static double kernel_pass(nc_pool *pool, int k, const void *buf, size_t bytes, double *per_cpu) {
    double t0 = nc_now_s(), c0 = nc_process_cpu_s();
    size_t read = cpu_decode_stream(pool, k, buf, bytes);
    double dt = nc_now_s() - t0, c = nc_process_cpu_s() - c0;
    *per_cpu = c > 0 ? (double)read / c : 0.0;
    return dt > 0 ? (double)read / dt : 0.0;
}

struct cpu_membw_probe {
    uint64_t *buf;  /* 4 KiB pages */
    uint64_t *hbuf; /* 2 MiB pages, or NULL */
    nc_huge huge;
    size_t n_words;
    int n_plain;
};

cpu_membw_probe *cpu_membw_open(size_t size_bytes, cpu_membw *out) {
    size_t n_words = size_bytes / 64 * 8; /* whole lines */
    memset(out, 0, sizeof *out);
    cpu_membw_probe *pr = calloc(1, sizeof *pr);
    if (!pr) return NULL;
    pr->n_words = n_words;
    pr->buf = n_words ? small_pages(n_words * 8) : NULL;
    if (!pr->buf) {
        free(pr);
        return NULL;
    }
    pr->hbuf = nc_huge_pages_available() ? nc_huge_alloc(n_words * 8, &pr->huge) : NULL;
    if (pr->hbuf) fill_distinct(pr->hbuf, n_words);
    pr->n_plain = pr->hbuf ? CPU_MEMBW_PLAIN_PATTERNS : CPU_MEMBW_PLAIN_PATTERNS / 2;
    const char *kernels[CPU_MEMBW_KERNEL_PATTERNS];
    int n_kernels = cpu_decode_stream_kernels(kernels, CPU_MEMBW_KERNEL_PATTERNS);
    out->n_patterns = pr->n_plain + n_kernels;
    for (int p = 0; p < out->n_patterns; p++)
        if (p < pr->n_plain)
            snprintf(out->name[p], CPU_MEMBW_NAME, "%s%s", patterns[p % PER_PAGE_SIZE].name,
                     p >= PER_PAGE_SIZE ? ", 2 MiB pages" : "");
        else
            snprintf(out->name[p], CPU_MEMBW_NAME, "decode kernel %s, a layer's products%s",
                     kernels[p - pr->n_plain], pr->hbuf ? ", 2 MiB pages" : "");
    return pr;
}

double cpu_membw_round(cpu_membw_probe *pr, nc_pool *pool, cpu_membw *out) {
    double round_best = 0.0;
    for (int p = 0; p < out->n_patterns; p++) {
        double per_cpu,
            bw = p < pr->n_plain ? plain_pass(pool, p, p >= PER_PAGE_SIZE ? pr->hbuf : pr->buf,
                                              pr->n_words, &per_cpu)
                                 : kernel_pass(pool, p - pr->n_plain,
                                               pr->hbuf ? (void *)pr->hbuf : (void *)pr->buf,
                                               pr->n_words * 8, &per_cpu);
        if (bw > out->best_of[p]) out->best_of[p] = bw;
        if (bw > round_best) round_best = bw;
        if (bw > out->best) {
            out->best = bw;
            snprintf(out->pattern, CPU_MEMBW_NAME, "%s", out->name[p]);
        }
        if (per_cpu > out->per_cpu_s) {
            out->per_cpu_s = per_cpu;
            snprintf(out->pattern_per_cpu_s, CPU_MEMBW_NAME, "%s", out->name[p]);
        }
    }
    if (out->runs_n < CPU_MEMBW_MAX_RUNS) out->runs[out->runs_n++] = round_best;
    return round_best;
}

void cpu_membw_close(cpu_membw_probe *pr) {
    if (!pr) return;
    munmap(pr->buf, pr->n_words * 8);
    nc_huge_free(&pr->huge);
    free(pr);
}

double cpu_read_bandwidth(nc_pool *pool, size_t size_bytes, int reps, cpu_membw *out) {
    cpu_membw_probe *pr = cpu_membw_open(size_bytes, out);
    if (!pr) return 0.0;
    for (int r = 0; r < reps; r++)
        cpu_membw_round(pr, pool, out);
    cpu_membw_close(pr);
    return out->best;
}
