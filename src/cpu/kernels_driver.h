/* The register tiles and the loops around them, shared by the SIMD kernel
 * files (kernels_avx2.c, kernels_avx512.c, kernels_neon.c). Each file
 * defines, per weight type SUF, ldv_<SUF>(w, i) (WIDTH weights from element
 * i, widened to fp32 in a register) and ld1_<SUF>(w, i), then expands
 * CPU_DEF_TILE with its vector type and operations, and CPU_DEF_MATMUL_LOOPS
 * into the cpu_matmul_fn matmul_<SUF>: decoding (one activation row) walks
 * RB_DECODE weight rows per tile, prompts RB_PROMPT x TB_PROMPT tiles, with
 * 1-wide tiles for the leftover rows and tokens. Kernel files only. */
#ifndef NC_CPU_KERNELS_DRIVER_H
#define NC_CPU_KERNELS_DRIVER_H

/* Bytes per weight of each type, for addresses. */
#define CPU_ESZ_f32 4
#define CPU_ESZ_f16 2
#define CPU_ESZ_bf16 2

/* CPU_PREFETCH_NEXT_TILE: decoding reads RB rows side by side, each only a
 * few KiB long, too short for the hardware prefetcher to ramp up on: one
 * thread read ~6-7 GB/s from DRAM against ~10 GB/s for a plain sequential
 * read. Each tile therefore requests the same columns of the next RB rows
 * while it works (one tile ahead); Q8/Q4 decoding went from ~7 to ~10 GB/s
 * per thread. Prefetches past the matrix's last row are harmless hints.
 *
 * tile_<SUF>: y[t+b][r+a] for a < RB, b < TB (RB <= MAXR, TB <= MAXT). RB
 * and TB are constants after inlining, so acc[][] lives in registers; each
 * weight vector feeds TB FMAs and each activation vector RB. The k % WIDTH
 * tail is scalar. ZERO(), LOADX(p), FMA(w, x, acc) = acc + w * x, HSUM(v). */
#define CPU_DEF_TILE(SUF, VEC, WIDTH, MAXR, MAXT, ZERO, LOADX, FMA, HSUM)                          \
    static inline __attribute__((always_inline)) void tile_##SUF(                                  \
        const void *w, size_t ldw, const float *x, size_t ldx, float *y, size_t ldy, int k, int r, \
        int t, const int RB, const int TB) {                                                       \
        VEC acc[MAXR][MAXT];                                                                       \
        _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++)                                       \
            _Pragma("GCC unroll 8") for (int b = 0; b < TB; b++) acc[a][b] = ZERO();               \
        int i = 0;                                                                                 \
        for (; i + WIDTH <= k; i += WIDTH) {                                                       \
            VEC wv[MAXR];                                                                          \
            _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) {                                 \
                if (TB == 1) /* decoding: the next tile's rows (see CPU_PREFETCH_NEXT_TILE) */     \
                    __builtin_prefetch((const char *)w +                                           \
                                       ((size_t)(r + a + RB) * ldw + (size_t)i) * CPU_ESZ_##SUF);  \
                wv[a] = ldv_##SUF(w, (size_t)(r + a) * ldw + (size_t)i);                           \
            }                                                                                      \
            _Pragma("GCC unroll 8") for (int b = 0; b < TB; b++) {                                 \
                VEC xv = LOADX(x + (size_t)(t + b) * ldx + (size_t)i);                             \
                _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) acc[a][b] =                   \
                    FMA(wv[a], xv, acc[a][b]);                                                     \
            }                                                                                      \
        }                                                                                          \
        for (int a = 0; a < RB; a++)                                                               \
            for (int b = 0; b < TB; b++) {                                                         \
                const float *xr = x + (size_t)(t + b) * ldx;                                       \
                float s = HSUM(acc[a][b]);                                                         \
                for (int j = i; j < k; j++)                                                        \
                    s += xr[j] * ld1_##SUF(w, (size_t)(r + a) * ldw + (size_t)j);                  \
                y[(size_t)(t + b) * ldy + (size_t)(r + a)] = s;                                    \
            }                                                                                      \
    }

/* row_<SUF>: a row of n weights widened to fp32 (embedding lookups). */
#define CPU_DEF_ROW(SUF, WIDTH, STOREV)                                                            \
    static void row_##SUF(const void *src, float *dst, int n) {                                    \
        int i = 0;                                                                                 \
        for (; i + WIDTH <= n; i += WIDTH)                                                         \
            STOREV(dst + i, ldv_##SUF(src, (size_t)i));                                            \
        for (; i < n; i++)                                                                         \
            dst[i] = ld1_##SUF(src, (size_t)i);                                                    \
    }

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
