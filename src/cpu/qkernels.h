/* The quantized matmul kernels of each instruction set (qkernels_*.c), which
 * the kernel tables (kernels_*.c) point at, and the loops around their
 * register tiles: each file defines qtile_<SUF>(w, ldw, xq, ldq, xs, lds, y,
 * ldy, nb, r, t, RB, TB) and expands CPU_DEF_QMATMUL_LOOPS into
 * cpu_qmatmul_<SUF>. Include only from kernel files. */
#ifndef NC_CPU_QKERNELS_H
#define NC_CPU_QKERNELS_H

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_quant.h"

#define CPU_QMATMUL_ARGS                                                                           \
    const void *w, size_t ldw, const int8_t *xq, size_t ldq, const float *xs, size_t lds,          \
        float *y, size_t ldy, int n, int nb, int r0, int r1

#if defined(__x86_64__) || defined(_M_X64)
void cpu_qmatmul_q8_avx2(CPU_QMATMUL_ARGS);
void cpu_qmatmul_q4_avx2(CPU_QMATMUL_ARGS);
void cpu_qmatmul_q8_avx512(CPU_QMATMUL_ARGS);
void cpu_qmatmul_q4_avx512(CPU_QMATMUL_ARGS);
/* Q4X16 (q4_interleave.h): rows r0..r1 multiples of 16 */
void cpu_qmatmul_q4x16_avx2(CPU_QMATMUL_ARGS);
void cpu_qmatmul_q4x16_avx512(CPU_QMATMUL_ARGS);
extern const cpu_qpanel_kernels cpu_qpanel_avx512;
extern const cpu_qpanel_kernels cpu_qpanel_avxvnni; /* qkernels_vnni_avx2.c */
#endif
#if defined(__aarch64__)
void cpu_qmatmul_q8_neon(CPU_QMATMUL_ARGS);
void cpu_qmatmul_q4_neon(CPU_QMATMUL_ARGS);
/* FEAT_DotProd (qkernels_dotprod_neon.c) and FEAT_I8MM
 * (qkernels_i8mm_neon.c): call only where the CPU has them. */
void cpu_qmatmul_q8_neon_dotprod(CPU_QMATMUL_ARGS);
void cpu_qmatmul_q4_neon_dotprod(CPU_QMATMUL_ARGS);
extern const cpu_qpanel_kernels cpu_qpanel_neon_dotprod;
extern const cpu_qpanel_kernels cpu_qpanel_neon_i8mm;
#endif

/* The loops call qdecode_<SUF>(w, ldw, xq, xs, y, nb, r, r0, r1) for rows
 * r..r+RB_DECODE-1 into y[r..]; r0..r1 are the caller's rows (a pool
 * task's), which the tile may prefetch from, and no further. A file whose
 * decoding tile is its qtile with one activation row defines it with this;
 * others write their own. */
#define CPU_DEF_QDECODE_FROM_QTILE(SUF, RB)                                                        \
    static inline __attribute__((always_inline)) void qdecode_##SUF(                               \
        const uint8_t *w, size_t ldw, const int8_t *xq, const float *xs, float *y, int nb, int r,  \
        int r0, int r1) {                                                                          \
        (void)r0;                                                                                  \
        (void)r1;                                                                                  \
        qtile_##SUF(w, ldw, xq, 0, xs, 0, y, 0, nb, r, 0, RB, 1);                                  \
    }

/* Decoding (n == 1) walks RB_DECODE weight rows per qdecode_<SUF> call;
 * prompts RB_PROMPT x TB_PROMPT tiles, with narrower tiles for the
 * leftovers. */
#define CPU_DEF_QMATMUL_LOOPS(SUF, RB_DECODE, RB_PROMPT, TB_PROMPT)                                \
    void cpu_qmatmul_##SUF(CPU_QMATMUL_ARGS) {                                                     \
        const uint8_t *wb = (const uint8_t *)w;                                                    \
        int r = r0;                                                                                \
        if (n == 1) {                                                                              \
            for (; r + RB_DECODE <= r1; r += RB_DECODE)                                            \
                qdecode_##SUF(wb, ldw, xq, xs, y, nb, r, r0, r1);                                  \
            for (; r < r1; r++)                                                                    \
                qtile_##SUF(wb, ldw, xq, ldq, xs, lds, y, ldy, nb, r, 0, 1, 1);                    \
            return;                                                                                \
        }                                                                                          \
        for (; r + RB_PROMPT <= r1; r += RB_PROMPT) {                                              \
            int t = 0;                                                                             \
            for (; t + TB_PROMPT <= n; t += TB_PROMPT)                                             \
                qtile_##SUF(wb, ldw, xq, ldq, xs, lds, y, ldy, nb, r, t, RB_PROMPT, TB_PROMPT);    \
            for (; t < n; t++)                                                                     \
                qtile_##SUF(wb, ldw, xq, ldq, xs, lds, y, ldy, nb, r, t, RB_PROMPT, 1);            \
        }                                                                                          \
        for (; r < r1; r++) {                                                                      \
            int t = 0;                                                                             \
            for (; t + TB_PROMPT <= n; t += TB_PROMPT)                                             \
                qtile_##SUF(wb, ldw, xq, ldq, xs, lds, y, ldy, nb, r, t, 1, TB_PROMPT);            \
            for (; t < n; t++)                                                                     \
                qtile_##SUF(wb, ldw, xq, ldq, xs, lds, y, ldy, nb, r, t, 1, 1);                    \
        }                                                                                          \
    }

/* Each block's correction -8 * sum(x) for the x16 kernels (the codes are
 * stored as 0..15, the weights are code - 8): plain C, which each kernel
 * file's compiler vectorizes for its own instruction set. */
static inline void cpu_q4x16_corrections(const int8_t *xq, int nbc, int32_t *ncorr) {
    for (int j = 0; j < nbc; j++) {
        int32_t sum = 0;
        for (int i = 0; i < 32; i++)
            sum += xq[(size_t)j * 32 + (size_t)i];
        ncorr[j] = -8 * sum;
    }
}

/* cpu_qmatmul_q4x16_<SUF> (q4_interleave.h): per activation row and chunk
 * of CHUNK blocks (an even count), the blocks' corrections, then
 * x16_group_to(e, x, xs, ncorr, nbc, y, accumulate) writes (or adds to) the
 * 16 sums of the group at e. */
#define CPU_DEF_Q4X16_LOOPS(SUF, CHUNK)                                                            \
    void cpu_qmatmul_q4x16_##SUF(CPU_QMATMUL_ARGS) {                                               \
        const uint8_t *wb = (const uint8_t *)w;                                                    \
        int32_t ncorr[CHUNK];                                                                      \
        for (int t = 0; t < n; t++) {                                                              \
            const int8_t *x = xq + (size_t)t * ldq;                                                \
            const float *s = xs + (size_t)t * lds;                                                 \
            float *yt = y + (size_t)t * ldy;                                                       \
            for (int j0 = 0; j0 < nb; j0 += CHUNK) {                                               \
                int nbc = nb - j0 < CHUNK ? nb - j0 : CHUNK;                                       \
                cpu_q4x16_corrections(x + (size_t)j0 * 32, nbc, ncorr);                            \
                for (int g = r0; g < r1; g += CPU_Q4X16_ROWS)                                      \
                    x16_group_to(wb + (size_t)g * ldw + (size_t)j0 / 2 * CPU_Q4X16_PAIR_BYTES,     \
                                 x + (size_t)j0 * 32, s + (size_t)j0 * CPU_QSCALE_REP, ncorr, nbc, \
                                 yt + g, j0 > 0);                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#endif
