/* The prompt GEMM for bf16 weights on AVX512-BF16 (gemm_bf16_avx512.c) and
 * on arm64 FEAT_BF16 (gemm_bf16_neon.c, bfmmla), a cpu_gemm_kernels like the
 * fp32 one, which the AVX-512 and NEON tables use for bf16 weights where the
 * CPU has the instructions (cpu_kernels.gemm_bf16, cpu_select_bf16). */
#ifndef NC_CPU_GEMM_BF16_H
#define NC_CPU_GEMM_BF16_H

#include "cpu/cpu_kernels.h"

#if defined(__x86_64__) || defined(_M_X64)
/* [CPU_BF16_ACCURATE]: activations as two bf16 terms (relative error
 * <= 2^-17 per product, within the fp32 parity bounds); [CPU_BF16_FAST]: one
 * term (2^-9), half the instructions. */
extern const cpu_gemm_kernels cpu_gemm_bf16_avx512[2];
#endif
#if defined(__aarch64__)
extern const cpu_gemm_kernels cpu_gemm_bf16_neon[2]; /* same two variants */
#endif
#define CPU_BF16_ACCURATE 0
#define CPU_BF16_FAST 1

/* For the kernel files: the two-entry table NAME of NR-row panels from
 * PACK and RUN_TERMS(panel, k, rows, x, ldx, y, ldy, n, terms). */
#define CPU_DEF_BF16_RUNS(RUN_TERMS)                                                               \
    static void run_2terms(const float *panel, int k, int rows, const float *x, size_t ldx,        \
                           float *y, size_t ldy, int n) {                                          \
        RUN_TERMS(panel, k, rows, x, ldx, y, ldy, n, 2);                                           \
    }                                                                                              \
    static void run_1term(const float *panel, int k, int rows, const float *x, size_t ldx,         \
                          float *y, size_t ldy, int n) {                                           \
        RUN_TERMS(panel, k, rows, x, ldx, y, ldy, n, 1);                                           \
    }
#define CPU_DEF_BF16_GEMMS(NAME, NR, PACK, RUN_TERMS)                                              \
    CPU_DEF_BF16_RUNS(RUN_TERMS)                                                                   \
    const cpu_gemm_kernels NAME[2] = {{.nr = NR, .pack = PACK, .run = run_2terms},                 \
                                      {.nr = NR, .pack = PACK, .run = run_1term}};

/* The same with activations converted once per product (cpu_gemm_kernels
 * x_bytes, x_prep, run_x): X_PREP_TERMS(x, n, k, t, xb, terms) and
 * RUN_X_TERMS(panel, k, rows, xb, n, y, ldy, terms). */
#define CPU_DEF_BF16_GEMMS_X(NAME, NR, PACK, RUN_TERMS, X_BYTES, X_PREP_TERMS, RUN_X_TERMS)        \
    CPU_DEF_BF16_RUNS(RUN_TERMS)                                                                   \
    static void x_prep_2terms(const float *x, int n, int k, int t, void *xb) {                     \
        X_PREP_TERMS(x, n, k, t, xb, 2);                                                           \
    }                                                                                              \
    static void x_prep_1term(const float *x, int n, int k, int t, void *xb) {                      \
        X_PREP_TERMS(x, n, k, t, xb, 1);                                                           \
    }                                                                                              \
    static void run_x_2terms(const float *panel, int k, int rows, const void *xb, int n, float *y, \
                             size_t ldy) {                                                         \
        RUN_X_TERMS(panel, k, rows, xb, n, y, ldy, 2);                                             \
    }                                                                                              \
    static void run_x_1term(const float *panel, int k, int rows, const void *xb, int n, float *y,  \
                            size_t ldy) {                                                          \
        RUN_X_TERMS(panel, k, rows, xb, n, y, ldy, 1);                                             \
    }                                                                                              \
    const cpu_gemm_kernels NAME[2] = {                                                             \
        {NR, PACK, run_2terms, X_BYTES, x_prep_2terms, run_x_2terms},                              \
        {NR, PACK, run_1term, X_BYTES, x_prep_1term, run_x_1term}};

#endif
