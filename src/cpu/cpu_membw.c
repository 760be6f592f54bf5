/* Read-bandwidth probe (see cpu_membw.h). Each task sums its part so the
 * reads cannot be optimised away. Several patterns, because which one a
 * CPU streams fastest depends on its prefetchers and on how the threads'
 * streams interleave: 8-byte words or whole 64-byte lines, with or without
 * software prefetch, in 4 MiB slices handed out to whichever thread is
 * free (threads interleave through the buffer) or one contiguous part per
 * thread; and on 4 KiB pages or, where the system has them, 2 MiB pages
 * (the engine reads a model's weights onto those: io/weights_residency.h;
 * streaming them beat the 4 KiB probe by up to 1.5x on a Zen 5 VM). The
 * ceiling is the fastest. */
#include "cpu/cpu_membw.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/alloc.h"
#include "base/timer.h"

#define SLICE_BYTES ((size_t)1 << 22)
/* Software prefetch distance of the *-pf patterns. */
#define PREFETCH_BYTES 1024

typedef uint64_t line64 __attribute__((vector_size(64)));

typedef struct {
    const uint64_t *buf;
    size_t n_words;
    size_t words_per_task;
    int lines, prefetch;
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

static void read_part(void *ctx, int task, int thread) {
    bw_job *j = ctx;
    double c0 = thread_cpu_s();
    size_t w0 = (size_t)task * j->words_per_task, w1 = w0 + j->words_per_task;
    if (w1 > j->n_words) w1 = j->n_words;
    uint64_t s = w1 > w0 ? j->lines ? sum_lines(j->buf + w0, w1 - w0, j->prefetch)
                                    : sum_words(j->buf + w0, w1 - w0)
                         : 0;
    j->sums[thread & 255] += s;
    j->cpu_s[thread & 255] += thread_cpu_s() - c0;
}

static const struct {
    const char *name;
    int lines, prefetch, halves, huge;
} patterns[CPU_MEMBW_PATTERNS] = {
    {"words, 4 MiB slices", 0, 0, 0, 0},
    {"lines, 4 MiB slices", 1, 0, 0, 0},
    {"lines + prefetch, 4 MiB slices", 1, 1, 0, 0},
    {"lines, a part per thread", 1, 0, 1, 0},
    {"lines + prefetch, a part per thread", 1, 1, 1, 0},
    {"words, 4 MiB slices, 2 MiB pages", 0, 0, 0, 1},
    {"lines, 4 MiB slices, 2 MiB pages", 1, 0, 0, 1},
    {"lines + prefetch, 4 MiB slices, 2 MiB pages", 1, 1, 0, 1},
    {"lines, a part per thread, 2 MiB pages", 1, 0, 1, 1},
    {"lines + prefetch, a part per thread, 2 MiB pages", 1, 1, 1, 1},
};

/* The buffer on 4 KiB pages (as a mmapped file is), touched. */
static uint64_t *small_pages(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#if defined(MADV_NOHUGEPAGE)
    madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
    memset(p, 1, bytes);
    return p;
}

double cpu_read_bandwidth(nc_pool *pool, size_t size_bytes, int reps, cpu_membw *out) {
    size_t n_words = size_bytes / 64 * 8; /* whole lines */
    memset(out, 0, sizeof *out);
    uint64_t *buf = n_words ? small_pages(n_words * 8) : NULL;
    if (!buf) return 0.0;
    nc_huge huge = {0};
    uint64_t *hbuf = nc_huge_pages_available() ? nc_huge_alloc(n_words * 8, &huge) : NULL;
    if (hbuf) memset(hbuf, 1, n_words * 8);
    int threads = nc_pool_threads(pool);
    static bw_job j; /* 4 KiB of sums: off the stack */
    memset(&j, 0, sizeof j);
    j.n_words = n_words;
    out->n_patterns = hbuf ? CPU_MEMBW_PATTERNS : CPU_MEMBW_PATTERNS / 2;
    for (int r = 0; r < reps; r++)
        for (int p = 0; p < out->n_patterns; p++) {
            j.buf = patterns[p].huge ? hbuf : buf;
            j.lines = patterns[p].lines;
            j.prefetch = patterns[p].prefetch;
            /* a part per thread: whole lines, the last part the rest */
            j.words_per_task = patterns[p].halves
                                   ? (n_words / 8 + (size_t)threads - 1) / (size_t)threads * 8
                                   : SLICE_BYTES / 8;
            int tasks = (int)((n_words + j.words_per_task - 1) / j.words_per_task);
            for (int i = 0; i < threads && i < 256; i++)
                j.cpu_s[i] = 0;
            double t0 = nc_now_s();
            nc_pool_for(pool, tasks, read_part, &j);
            double dt = nc_now_s() - t0, bw = dt > 0 ? (double)(n_words * 8) / dt : 0.0, c = 0;
            for (int i = 0; i < threads && i < 256; i++)
                c += j.cpu_s[i];
            double per_cpu = c > 0 ? (double)(n_words * 8) / c : 0.0;
            out->name[p] = patterns[p].name;
            if (bw > out->best_of[p]) out->best_of[p] = bw;
            if (r < CPU_MEMBW_MAX_RUNS && bw > out->runs[r]) out->runs[r] = bw;
            if (bw > out->best) {
                out->best = bw;
                out->pattern = patterns[p].name;
            }
            if (per_cpu > out->per_cpu_s) {
                out->per_cpu_s = per_cpu;
                out->pattern_per_cpu_s = patterns[p].name;
            }
        }
    out->runs_n = reps < CPU_MEMBW_MAX_RUNS ? reps : CPU_MEMBW_MAX_RUNS;
    munmap(buf, n_words * 8);
    nc_huge_free(&huge);
    return out->best;
}
