/* The loops around the register tiles, shared by the SIMD kernel files
 * (kernels_avx2.c, kernels_avx512.c): each file defines its loads and
 * tile_<SUF>(w, ldw, x, ldx, y, ldy, k, r, t, RB, TB), then expands
 * CPU_DEF_MATMUL_LOOPS(SUF, RB_DECODE, RB_PROMPT, TB_PROMPT) into the
 * cpu_matmul_fn matmul_<SUF>: decoding (one activation row) walks RB_DECODE
 * weight rows per tile, prompts RB_PROMPT x TB_PROMPT tiles, with 1-wide
 * tiles for the leftover rows and tokens. Include only from kernel files. */
#ifndef NC_CPU_KERNELS_DRIVER_H
#define NC_CPU_KERNELS_DRIVER_H

#define CPU_DEF_MATMUL_LOOPS(SUF, RB_DECODE, RB_PROMPT, TB_PROMPT)                                 \
    static void matmul_##SUF(const void *w, size_t ldw, const float *x, size_t ldx, float *y,      \
                             size_t ldy, int n, int k, int r0, int r1) {                           \
        int r = r0;                                                                                \
        if (n == 1) {                                                                              \
            for (; r + RB_DECODE <= r1; r += RB_DECODE)                                            \
                tile_##SUF(w, ldw, x, ldx, y, ldy, k, r, 0, RB_DECODE, 1);                         \
            for (; r < r1; r++)                                                                    \
                tile_##SUF(w, ldw, x, ldx, y, ldy, k, r, 0, 1, 1);                                 \
            return;                                                                                \
        }                                                                                          \
        for (; r + RB_PROMPT <= r1; r += RB_PROMPT) {                                              \
            int t = 0;                                                                             \
            for (; t + TB_PROMPT <= n; t += TB_PROMPT)                                             \
                tile_##SUF(w, ldw, x, ldx, y, ldy, k, r, t, RB_PROMPT, TB_PROMPT);                 \
            for (; t < n; t++)                                                                     \
                tile_##SUF(w, ldw, x, ldx, y, ldy, k, r, t, RB_PROMPT, 1);                         \
        }                                                                                          \
        for (; r < r1; r++) {                                                                      \
            int t = 0;                                                                             \
            for (; t + TB_PROMPT <= n; t += TB_PROMPT)                                             \
                tile_##SUF(w, ldw, x, ldx, y, ldy, k, r, t, 1, TB_PROMPT);                         \
            for (; t < n; t++)                                                                     \
                tile_##SUF(w, ldw, x, ldx, y, ldy, k, r, t, 1, 1);                                 \
        }                                                                                          \
    }

#endif
