/* Read-bandwidth probe (see cpu_membw.h). Each task sums its slice so the
 * reads cannot be optimised away. */
#include "cpu/cpu_membw.h"

#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/timer.h"

#define SLICE_BYTES ((size_t)1 << 22)

typedef struct {
    const uint64_t *buf;
    size_t n_words;
    uint64_t sums[256];
} bw_job;

static void read_slice(void *ctx, int task, int thread) {
    bw_job *j = ctx;
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
}

double cpu_read_bandwidth(nc_pool *pool, size_t size_bytes, int reps, double *each) {
    size_t n_words = size_bytes / 8;
    uint64_t *buf = nc_alloc_aligned(n_words * 8);
    if (!buf) return 0.0;
    memset(buf, 1, n_words * 8); /* touch every page before timing */
    bw_job j = {buf, n_words, {0}};
    int tasks = (int)((size_bytes + SLICE_BYTES - 1) / SLICE_BYTES);
    double best = 0.0;
    for (int r = 0; r < reps; r++) {
        double t0 = nc_now_s();
        nc_pool_for(pool, tasks, read_slice, &j);
        double dt = nc_now_s() - t0, bw = dt > 0 ? (double)(n_words * 8) / dt : 0.0;
        if (each) each[r] = bw;
        if (bw > best) best = bw;
    }
    nc_free_aligned(buf);
    return best;
}
