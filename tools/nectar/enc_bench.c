/* `nectar embed -m DIR --bench 1x96,3x64 [--runs N]`: CPU latency of the
 * encoder forward pass (embeddings through final norm and pooling) on
 * random token ids at fixed batch x length shapes, no padding. Two warm-up
 * passes, then N timed passes per shape; per-input latency = pass time / B,
 * reported as mean, P50 and P95 (numpy's percentile definition), with the
 * process CPU time per input beside it (on a shared machine wall time
 * includes waiting for cores; CPU time does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "bench/stats.h"
#include "commands.h"
#include "enc_cli.h"

#define MAX_SHAPES 8

#define WARMUP 2

static int parse_shapes(const char *s, int *b, int *l, int *n) {
    *n = 0;
    for (const char *p = s; *p;) {
        char *end;
        long x = strtol(p, &end, 10), y;
        if (end == p || *end != 'x' || x < 1 || x > 64) return -1;
        p = end + 1;
        y = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || y < 1 || y > 8192 || *n == MAX_SHAPES) return -1;
        b[*n] = (int)x;
        l[(*n)++] = (int)y;
        p = *end ? end + 1 : end;
    }
    return *n ? 0 : -1;
}

int enc_cli_bench(const char *model, const char *shapes, int runs, int threads) {
    int B[MAX_SHAPES], L[MAX_SHAPES], n_shapes;
    if (parse_shapes(shapes, B, L, &n_shapes))
        return cli_failf("embed --bench: '%s' is not a list like 1x96,3x64", shapes);
    nc_error err = {0};
    engine *m = NULL;
    engine_options eo = {0};
    eo.n_threads = threads;
    if (engine_open("modernbert-cpu", model, &eo, &m, &err) != NC_OK) return cli_fail(&err);
    const modernbert_config *c = m->encoder;
    printf("# %s: %d layers, hidden %d, vocab %d, %s weights, %d threads, %d runs\n", model,
           c->num_hidden_layers, c->hidden_size, c->vocab_size, m->weight_dtype, m->n_threads,
           runs);
    int rc = 0;
    for (int s = 0; s < n_shapes && !rc; s++) {
        size_t n = (size_t)B[s] * (size_t)L[s];
        int32_t *ids = malloc(n * sizeof *ids);
        float *pooled = malloc((size_t)B[s] * (size_t)c->hidden_size * sizeof *pooled);
        double *t = malloc((size_t)runs * sizeof *t);
        if (!ids || !pooled || !t) rc = cli_failf("embed --bench: out of memory");
        uint64_t x = 12345;
        for (size_t i = 0; i < n && !rc; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            ids[i] = (int32_t)((x >> 33) % (uint64_t)c->vocab_size);
        }
        modernbert_io io = {
            .ids = ids, .batch = B[s], .seq = L[s], .pooled = pooled, .pooling = -1};
        double cpu = 0;
        for (int r = -WARMUP; r < runs && !rc; r++) {
            double t0 = nc_now_s(), c0 = nc_process_cpu_s();
            if (engine_encode(m, &io, &err) != NC_OK) rc = cli_fail(&err);
            if (r < 0) continue; /* warm-up */
            t[r] = (nc_now_s() - t0) * 1e3 / B[s];
            cpu += (nc_process_cpu_s() - c0) * 1e3 / B[s] / runs;
        }
        nc_summary sm;
        if (!rc && nc_summarize(t, (size_t)runs, &sm, &err) != NC_OK) rc = cli_fail(&err);
        if (!rc)
            printf("B=%d L=%d  per input: mean %.2f ms  p50 %.2f ms  p95 %.2f ms  "
                   "(per pass %.2f ms; cpu %.2f ms per input)\n",
                   B[s], L[s], sm.mean, sm.p50, sm.p95, sm.mean * B[s], cpu);
        free(ids);
        free(pooled);
        free(t);
    }
    engine_close(m);
    return rc;
}
