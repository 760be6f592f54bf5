/* Decoding (one to a few activation rows) against bf16 weights on bf16 dot
 * products (AVX512-BF16 vdpbf16ps, gemv_bf16_avx512.c): the weights are
 * multiplied as stored, 32 per 64-byte load, never widened. The activations
 * are rounded to bf16 terms once per call:
 *   - 3 terms (x = x1 + x2 + x3 exactly, 8 significant bits each): every
 *     product w * x is exact in fp32 and summed in fp32, as the fp32 FMA
 *     tiles do ("accurate": the fp32-activation contract);
 *   - 1 term (x rounded to bf16, relative error 2^-9 per product, what
 *     llama.cpp's bf16 dot product does): "fast".
 * Each variant is a cpu_matmul_fn for bf16 weights; which one a table uses
 * is chosen by measurement (cpu_wisdom.h) or by NECTAR_BF16. */
#ifndef NC_CPU_GEMV_BF16_H
#define NC_CPU_GEMV_BF16_H

#include "cpu/cpu_kernels.h"

typedef struct cpu_gemv_bf16 {
    const char *name; /* "dp3", "dp1", "dp3-pf2", ... */
    /* 3: exact products (accurate: three bf16 terms, or eo-r1y's fp32
     * FMAs), 1: activations rounded (fast) */
    int terms;
    cpu_matmul_fn fn;
} cpu_gemv_bf16;

#if defined(__x86_64__) || defined(_M_X64)
/* Every variant (both term counts, each with its prefetch distances); the
 * first of each term count is the one used when nothing was measured. */
extern const cpu_gemv_bf16 cpu_gemv_bf16_avx512[];
extern const int cpu_gemv_bf16_avx512_count;
/* The index of the first variant with `terms` terms (1 or 3). */
int cpu_gemv_bf16_first(int terms);
#endif

#endif
