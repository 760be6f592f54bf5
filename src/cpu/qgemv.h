/* Quantized decoding (one activation row against Q8/Q4 weights) read one
 * row at a time (qkernels_avx512.c), as candidates that cpu_wisdom times
 * against the table's own 8-row tile ("r8"): the rows of a pool task are
 * then a single sequential stream, the pattern hardware prefetchers follow
 * best, with an optional software prefetch a fixed number of 64-byte lines
 * ahead in that stream (never past the task's last row). The integer sums
 * per block are exact as in every kernel; only the order of the fp32 sum
 * over blocks differs (4 accumulators), so results agree with the other
 * kernels within fp32 rounding of that sum. Each entry is a
 * cpu_qmatmul_fn: with more than one activation row it is the table's
 * kernel. */
#ifndef NC_CPU_QGEMV_H
#define NC_CPU_QGEMV_H

#include "cpu/cpu_kernels.h"

typedef struct cpu_qgemv {
    const char *name; /* "r1-pf0", "r1-pf8", ... */
    int fmt;          /* 0: Q8, 1: Q4 (cpu_kernels.qmatmul's index) */
    cpu_qmatmul_fn fn;
} cpu_qgemv;

#if defined(__x86_64__) || defined(_M_X64)
extern const cpu_qgemv cpu_qgemv_avx512[];
extern const int cpu_qgemv_avx512_count;
#endif

#endif
