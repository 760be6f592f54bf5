/* The memory read bandwidth right now, in one short line: a level reading
 * for benchmarks on machines whose bandwidth moves between levels (a
 * shared VM's moved between ~35 and ~80 GB/s within minutes;
 * docs/performance.md). Reads a buffer larger than common L3 caches with
 * every thread a contiguous part, three passes, and prints the best pass
 * in GB/s. Not part of nectar: tools/bench-vs-llamacpp.sh compiles it.
 *
 * usage: membw_level [THREADS] [MIB]   (default 2 threads, 512 MiB) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 64 bytes, one vector load where the target has them (gcc and clang) */
typedef uint64_t line __attribute__((vector_size(64)));

typedef struct {
    const line *p;
    size_t n; /* lines */
    uint64_t sum;
} part;

static void *read_part(void *arg) {
    part *t = arg;
    line s0 = {0}, s1 = {0};
    for (size_t i = 0; i + 2 <= t->n; i += 2) {
        s0 ^= t->p[i];
        s1 ^= t->p[i + 1];
    }
    line s = s0 ^ s1;
    for (int j = 0; j < 8; j++) /* kept: the reads are not optimised away */
        t->sum ^= s[j];
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 512;
    if (threads < 1 || threads > 256 || mib < 1) {
        fprintf(stderr, "usage: membw_level [THREADS 1-256] [MIB]\n");
        return 2;
    }
    size_t n = (mib << 20) / sizeof(line);
    line *buf = aligned_alloc(64, n * sizeof *buf);
    part *parts = calloc((size_t)threads, sizeof *parts);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!buf || !parts || !tid) {
        fprintf(stderr, "membw_level: out of memory for %zu MiB\n", mib);
        return 1;
    }
    memset(buf, 1, n * sizeof *buf);
    double best = 0;
    for (int pass = 0; pass < 3; pass++) {
        double t0 = now();
        for (int t = 0; t < threads; t++) {
            parts[t] = (part){buf + n / threads * t, n / threads, 0};
            pthread_create(&tid[t], NULL, read_part, &parts[t]);
        }
        for (int t = 0; t < threads; t++) /* each part's xor goes to parts[t].sum */
            pthread_join(tid[t], NULL);
        double gbs = (double)(n / threads * threads * sizeof *buf) / (now() - t0) / 1e9;
        best = gbs > best ? gbs : best;
    }
    printf("%.1f\n", best);
    free(buf);
    free(parts);
    free(tid);
    return 0;
}
