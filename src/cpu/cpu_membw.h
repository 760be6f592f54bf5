/* A memory read-bandwidth probe meant as a ceiling: the denominator of the
 * decoding roofline (weight bytes read per token / bandwidth = the floor on
 * time per generated token) that `nectar bench` prints beside its
 * measurements. Several access patterns and thread placements are timed
 * and the fastest is taken, so a real program should not beat it. */
#ifndef NC_CPU_MEMBW_H
#define NC_CPU_MEMBW_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"

/* six access patterns, on 4 KiB pages then on 2 MiB pages (the second
 * half only where the system has huge pages), then the bf16 decode kernels
 * (cpu_wisdom.h: cpu_decode_stream) reading a layer's products, on the
 * huge pages where there are */
#define CPU_MEMBW_PLAIN_PATTERNS 12
#define CPU_MEMBW_KERNEL_PATTERNS 20
#define CPU_MEMBW_PATTERNS (CPU_MEMBW_PLAIN_PATTERNS + CPU_MEMBW_KERNEL_PATTERNS)
#define CPU_MEMBW_MAX_RUNS 100
#define CPU_MEMBW_NAME 80

typedef struct cpu_membw {
    double best;                   /* bytes/s: the fastest pass of any pattern */
    char pattern[CPU_MEMBW_NAME]; /* which pattern gave it */
    /* the best bytes per second of CPU time the reading threads got (what
     * one running thread streams, whatever else shares the machine), and
     * the pattern that gave it */
    double per_cpu_s;
    char pattern_per_cpu_s[CPU_MEMBW_NAME];
    int n_patterns;
    char name[CPU_MEMBW_PATTERNS][CPU_MEMBW_NAME];
    double best_of[CPU_MEMBW_PATTERNS]; /* each pattern's best bytes/s */
    int runs_n;
    double runs[CPU_MEMBW_MAX_RUNS]; /* each round's fastest pattern, bytes/s */
} cpu_membw;

/* `reps` rounds, each timing every pattern once over a buffer of
 * size_bytes (much larger than the caches; two of them where there are
 * huge pages) read by the pool's threads;
 * returns out->best, or 0 if the buffer cannot be allocated. */
double cpu_read_bandwidth(nc_pool *pool, size_t size_bytes, int reps, cpu_membw *out);

/* The same in steps, for a caller that pairs each round with its own
 * measurement (bench: a round after each tg run, since the bandwidth of a
 * shared VM can move between them): open allocates and fills the buffers
 * and names the patterns in *out (NULL: no memory); each round times every
 * pattern once, folds it into *out (best, best_of, per_cpu_s, runs) and
 * returns that round's fastest pass. */
typedef struct cpu_membw_probe cpu_membw_probe;
cpu_membw_probe *cpu_membw_open(size_t size_bytes, cpu_membw *out);
double cpu_membw_round(cpu_membw_probe *p, nc_pool *pool, cpu_membw *out);
void cpu_membw_close(cpu_membw_probe *p);

#define CPU_MEMBW_DEFAULT_BYTES ((size_t)2 << 30)

/* The sum of n_words words at p (64-byte aligned; whole groups of 16
 * words, a shorter tail is left out) read in 32-byte loads: the probe's
 * fastest plain loop, AVX2 where the kernel table in use has it, else
 * portable. */
uint64_t cpu_membw_sum_32(const uint64_t *p, size_t n_words);

#if defined(__x86_64__) || defined(_M_X64)
/* The sum of n_words words at p (32-byte aligned) in 32-byte loads
 * (membw_avx2.c); only where the CPU has AVX2. */
uint64_t cpu_membw_sum_avx2(const uint64_t *p, size_t n_words);
#endif

#endif
