/* Read-bandwidth probe (see cpu_membw.h). Each task sums its slice so the
 * reads cannot be optimised away. */
#include "cpu/cpu_membw.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/timer.h"

#define SLICE_BYTES ((size_t)1 << 22)

typedef struct {
    const uint64_t *buf;
    size_t n_words;
    uint64_t sums[256];
    double cpu_s[256]; /* CPU time each thread spent reading */
} bw_job;

static double thread_cpu_s(void) {
    struct timespec t;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 ? (double)t.tv_sec + t.tv_nsec * 1e-9
                                                           : 0.0;
}

static void read_slice(void *ctx, int task, int thread) {
    bw_job *j = ctx;
    double c0 = thread_cpu_s();
    size_t w0 = (size_t)task * (SLICE_BYTES / 8), w1 = w0 + SLICE_BYTES / 8;
    if (w1 > j->n_words) w1 = j->n_words;
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = w0; i + 4 <= w1; i += 4) {
        a += j->buf[i];
        b += j->buf[i + 1];
        c += j->buf[i + 2];
        d += j->buf[i + 3];
    }
    j->sums[thread & 255] += a + b + c + d;
    j->cpu_s[thread & 255] += thread_cpu_s() - c0;
}

double cpu_read_bandwidth(nc_pool *pool, size_t size_bytes, int reps, double *each,
                          double *per_cpu_s) {
    size_t n_words = size_bytes / 8;
    uint64_t *buf = nc_alloc_aligned(n_words * 8);
    if (!buf) return 0.0;
    memset(buf, 1, n_words * 8); /* touch every page before timing */
    bw_job j = {buf, n_words, {0}, {0}};
    int tasks = (int)((size_bytes + SLICE_BYTES - 1) / SLICE_BYTES);
    double best = 0.0, best_cpu = 0.0;
    int threads = nc_pool_threads(pool);
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < threads && i < 256; i++)
            j.cpu_s[i] = 0;
        double t0 = nc_now_s();
        nc_pool_for(pool, tasks, read_slice, &j);
        double dt = nc_now_s() - t0, bw = dt > 0 ? (double)(n_words * 8) / dt : 0.0, c = 0;
        for (int i = 0; i < threads && i < 256; i++)
            c += j.cpu_s[i];
        if (each) each[r] = bw;
        if (bw > best) best = bw;
        if (c > 0 && (double)(n_words * 8) / c > best_cpu) best_cpu = (double)(n_words * 8) / c;
    }
    if (per_cpu_s) *per_cpu_s = best_cpu;
    nc_free_aligned(buf);
    return best;
}
