/* The register tiles and the loops around them, shared by the SIMD kernel
 * files (kernels_avx2.c, kernels_avx512.c, kernels_neon.c). Each file
 * defines, per weight type SUF, ldv_<SUF>(w, i) (WIDTH weights from element
 * i, widened to fp32 in a register) and ld1_<SUF>(w, i), then expands
 * CPU_DEF_TILE with its vector type and operations, and CPU_DEF_MATMUL_LOOPS
 * into the cpu_matmul_fn matmul_<SUF>: decoding (one activation row) walks
 * RB_DECODE weight rows per tile, prompts RB_PROMPT x TB_PROMPT tiles, with
 * 1-wide tiles for the leftover rows and tokens. CPU_DEF_GEMM and
 * CPU_DEF_GEMM_PACK build the prompt GEMM (cpu_gemm_kernels) the same way.
 * Kernel files only. */
#ifndef NC_CPU_KERNELS_DRIVER_H
#define NC_CPU_KERNELS_DRIVER_H

#include <string.h>

#include "base/half.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_quant.h"
#include "cpu/q4_interleave.h"

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

/* ---- The prompt GEMM (cpu_gemm_kernels) ----
 * Outer-product form: a panel block holds NR = 2 * WIDTH weight rows as
 * [k][NR] fp32, so one k step loads two weight vectors, broadcasts each of TB
 * activations once and issues 2 * TB FMAs into accumulators that stay in
 * registers for the whole K block; results are vectors along the weight-row
 * axis, which is y's contiguous axis: no horizontal sums.
 *
 * Loop order (run): chunks of CPU_GEMM_TOKENS activation rows, K blocks of
 * CPU_GEMM_KC columns; within one, a row block's KC x NR weights (128 KiB at
 * NR = 32, from L2) serve every token tile of the chunk, and the chunk's K
 * block of activations stays in L2/L3 across the task's row blocks. Partial
 * sums of later K blocks are added to y. Measured on Qwen3-0.6B pp512
 * (AVX-512): KC 1024 beat 512 by ~2% and 256 by ~6% (fewer passes over y,
 * fewer tile starts); chunks of 120..480 tokens were alike; copying each
 * activation tile into a contiguous buffer first (against the 4 KiB set
 * aliasing of rows k floats apart) was 10-20% slower. */
#define CPU_GEMM_KC 1024
#define CPU_GEMM_TOKENS 240

/* One element of a Q8 / Q4 row (cpu_quant.h), as cpu_dequantize_row does it. */
static inline float ld1_q8(const void *row, size_t i) {
    const uint8_t *b = (const uint8_t *)row + i / CPU_QBLOCK * CPU_Q8_BLOCK_BYTES;
    nc_fp16 d;
    memcpy(&d, b, 2);
    return nc_fp16_to_f32(d) * (float)(int8_t)b[2 + i % CPU_QBLOCK];
}
static inline float ld1_q4(const void *row, size_t i) {
    const uint8_t *b = (const uint8_t *)row + i / CPU_QBLOCK * CPU_Q4_BLOCK_BYTES;
    size_t e = i % CPU_QBLOCK;
    nc_fp16 d;
    memcpy(&d, b, 2);
    return nc_fp16_to_f32(d) * (float)((e < 16 ? b[2 + e] & 15 : b[2 + e - 16] >> 4) - 8);
}

/* gemm_tile: y[b*ldy + a] (+)= sum_{i < kc} x[b*ldx + i] * p[i*NR + a] for
 * b < TB, a < valid (the rest of the NR lanes are padding). TB is a constant
 * after inlining. ZERO(), LOAD(p), STORE(p, v), ADD(a, b), BCAST(p) (the
 * float at p in every lane), FMA(w, x, acc) = acc + w * x. */
#define CPU_DEF_GEMM(VEC, WIDTH, TBMAX, ZERO, LOAD, STORE, ADD, BCAST, FMA)                        \
    static inline __attribute__((always_inline)) void gemm_tile(                                   \
        const float *p, int kc, const float *x, size_t ldx, float *y, size_t ldy, int valid,       \
        int accumulate, const int TB) {                                                            \
        VEC acc[TBMAX][2];                                                                         \
        _Pragma("GCC unroll 16") for (int b = 0; b < TB; b++) acc[b][0] = acc[b][1] = ZERO();      \
        for (int i = 0; i < kc; i++) {                                                             \
            VEC w0 = LOAD(p + (size_t)i * (2 * WIDTH)),                                            \
                w1 = LOAD(p + (size_t)i * (2 * WIDTH) + WIDTH);                                    \
            _Pragma("GCC unroll 16") for (int b = 0; b < TB; b++) {                                \
                VEC xb = BCAST(x + (size_t)b * ldx + (size_t)i);                                   \
                acc[b][0] = FMA(w0, xb, acc[b][0]);                                                \
                acc[b][1] = FMA(w1, xb, acc[b][1]);                                                \
            }                                                                                      \
        }                                                                                          \
        if (valid == 2 * WIDTH) {                                                                  \
            _Pragma("GCC unroll 16") for (int b = 0; b < TB; b++) {                                \
                float *yb = y + (size_t)b * ldy;                                                   \
                if (accumulate) {                                                                  \
                    acc[b][0] = ADD(acc[b][0], LOAD(yb));                                          \
                    acc[b][1] = ADD(acc[b][1], LOAD(yb + WIDTH));                                  \
                }                                                                                  \
                STORE(yb, acc[b][0]);                                                              \
                STORE(yb + WIDTH, acc[b][1]);                                                      \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (int b = 0; b < TB; b++) { /* the matrix's last, partial row block */                  \
            float part[2 * WIDTH], *yb = y + (size_t)b * ldy;                                      \
            STORE(part, acc[b][0]);                                                                \
            STORE(part + WIDTH, acc[b][1]);                                                        \
            for (int a = 0; a < valid; a++)                                                        \
                yb[a] = accumulate ? yb[a] + part[a] : part[a];                                    \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static void gemm_tile_any(const float *p, int kc, const float *x, size_t ldx, float *y,        \
                              size_t ldy, int valid, int accumulate, int tb) {                     \
        switch (tb) {                                                                              \
            CPU_GEMM_TILE_CASE(1, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(2, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(3, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(4, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(5, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(6, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(7, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(8, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(9, TBMAX)                                                           \
            CPU_GEMM_TILE_CASE(10, TBMAX)                                                          \
            CPU_GEMM_TILE_CASE(11, TBMAX)                                                          \
            CPU_GEMM_TILE_CASE(12, TBMAX)                                                          \
            CPU_GEMM_TILE_CASE(13, TBMAX)                                                          \
            CPU_GEMM_TILE_CASE(14, TBMAX)                                                          \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static void gemm_run(const float *panel, int k, int rows, const float *x, size_t ldx,          \
                         float *y, size_t ldy, int n) {                                            \
        enum { NR = 2 * WIDTH };                                                                   \
        /* equal chunks (a whole number of tiles each) rather than a short last one */             \
        int chunks = (n + CPU_GEMM_TOKENS - 1) / CPU_GEMM_TOKENS;                                  \
        int tiles_per_chunk = ((n + TBMAX - 1) / TBMAX + chunks - 1) / chunks;                     \
        int tokens = tiles_per_chunk * TBMAX;                                                      \
        for (int t0 = 0; t0 < n; t0 += tokens) {                                                   \
            int t1 = n - t0 < tokens ? n : t0 + tokens;                                            \
            for (int k0 = 0; k0 < k; k0 += CPU_GEMM_KC) {                                          \
                int kc = k - k0 < CPU_GEMM_KC ? k - k0 : CPU_GEMM_KC;                              \
                for (int r = 0; r < rows; r += NR) {                                               \
                    const float *p = panel + (size_t)r * (size_t)k + (size_t)k0 * NR;              \
                    int valid = rows - r < NR ? rows - r : NR;                                     \
                    for (int t = t0; t < t1; t += TBMAX)                                           \
                        gemm_tile_any(p, kc, x + (size_t)t * ldx + (size_t)k0, ldx,                \
                                      y + (size_t)t * ldy + (size_t)r, ldy, valid, k0 > 0,         \
                                      t1 - t < TBMAX ? t1 - t : TBMAX);                            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* A tile height no larger than the file's TBMAX (larger cases compile away). */
#define CPU_GEMM_TILE_CASE(N, TBMAX)                                                               \
    case N:                                                                                        \
        if (N <= TBMAX) gemm_tile(p, kc, x, ldx, y, ldy, valid, accumulate, N <= TBMAX ? N : 1);   \
        break;

/* Columns per run of a panel block's rows, and columns ahead that the
 * packing prefetches (1 KiB of fp32 rows). */
#define CPU_GEMM_PACK_COLS 64
#define CPU_GEMM_PACK_AHEAD 256

/* gemm_pack_<SUF>: rows r0..r1 (row stride ldw bytes) into panel blocks of
 * NR = 2 * WIDTH rows ([k][NR], rows past r1 zero). Per block, runs of
 * CPU_GEMM_PACK_COLS columns of each row are widened in registers (ldv_<SUF>)
 * into chunk[NR][COLS], then TRANSPOSE(src, stride, dst, WIDTH) writes
 * dst[c * NR + a] = src[a * stride + c] for c < WIDTH, a < NR. A run reads
 * whole cache lines of each row: visiting a row for only 16 columns at a
 * time was slower, since the block's rows, k * 2 or k * 4 bytes apart, share
 * a few L1 sets and evict each other's line before its second half is read. */
#define CPU_DEF_GEMM_PACK(SUF, WIDTH, STOREV, TRANSPOSE)                                           \
    static void gemm_pack_##SUF(const void *w, size_t ldw, int k, int r0, int r1, float *panel) {  \
        enum { NR = 2 * WIDTH, COLS = CPU_GEMM_PACK_COLS };                                        \
        float chunk[NR][COLS] __attribute__((aligned(64)));                                        \
        for (int rb = r0; rb < r1; rb += NR) {                                                     \
            int valid = r1 - rb < NR ? r1 - rb : NR;                                               \
            float *blk = panel + (size_t)(rb - r0) * (size_t)k;                                    \
            const unsigned char *row0 = (const unsigned char *)w + (size_t)rb * ldw;               \
            int i = 0;                                                                             \
            for (;;) {                                                                             \
                int cols = k - i >= COLS ? COLS : (k - i) / WIDTH * WIDTH;                         \
                if (cols == 0) break;                                                              \
                /* NR rows read side by side: too many streams for the hardware                    \
                 * prefetcher (see CPU_PREFETCH_NEXT_TILE), so ask for each row's                  \
                 * bytes CPU_GEMM_PACK_AHEAD columns on. */                                        \
                size_t ahead = (size_t)(i + CPU_GEMM_PACK_AHEAD) * ldw / (size_t)k;                \
                for (int a = 0; a < valid; a++)                                                    \
                    __builtin_prefetch(row0 + (size_t)a * ldw + ahead);                            \
                for (int a = 0; a < NR; a++)                                                       \
                    for (int c = 0; c < cols; c += WIDTH)                                          \
                        if (a < valid)                                                             \
                            STOREV(&chunk[a][c],                                                   \
                                   ldv_##SUF(row0 + (size_t)a * ldw, (size_t)(i + c)));            \
                        else                                                                       \
                            memset(&chunk[a][c], 0, WIDTH * sizeof(float));                        \
                for (int c = 0; c < cols; c += WIDTH)                                              \
                    TRANSPOSE(&chunk[0][c], COLS, blk + (size_t)(i + c) * NR, WIDTH);              \
                i += cols;                                                                         \
            }                                                                                      \
            for (; i < k; i++)                                                                     \
                for (int a = 0; a < NR; a++)                                                       \
                    blk[(size_t)i * NR + (size_t)a] =                                              \
                        a < valid ? ld1_##SUF(row0 + (size_t)a * ldw, (size_t)i) : 0.0f;           \
        }                                                                                          \
    }

/* TRANSPOSE for files without a register transpose: element by element. */
#define CPU_GEMM_TRANSPOSE_PLAIN(src, stride, dst, WIDTH)                                          \
    do {                                                                                           \
        for (int c_ = 0; c_ < WIDTH; c_++)                                                         \
            for (int a_ = 0; a_ < 2 * WIDTH; a_++)                                                 \
                (dst)[c_ * 2 * WIDTH + a_] = (src)[a_ * (stride) + c_];                            \
    } while (0)

/* gemm_pack_q4x16: rows r0..r1 of a Q4X16 matrix (q4_interleave.h) into
 * panel blocks as gemm_pack_<SUF> does for rows, ldv_q4x16(g, a, i)
 * giving WIDTH weights of row a of the group at g from column i, after
 * the file's q4x16_pack_groups(w, ldw, k, r0, r1, panel), which may do the
 * whole job faster from whole groups (returns 1) or leave it (0). A run is a pair of blocks,
 * whose codes and scales are 576 contiguous bytes per group, read in order
 * (the hardware prefetcher follows them). */
#define CPU_DEF_GEMM_PACK_Q4X16(WIDTH, STOREV, TRANSPOSE)                                          \
    static void gemm_pack_q4x16(const void *w, size_t ldw, int k, int r0, int r1, float *panel) {  \
        if (q4x16_pack_groups(w, ldw, k, r0, r1, panel)) return;                                   \
        enum { NR = 2 * WIDTH, RUN = 2 * CPU_QBLOCK };                                             \
        float run[NR][RUN] __attribute__((aligned(64)));                                           \
        for (int rb = r0; rb < r1; rb += NR) {                                                     \
            int valid = r1 - rb < NR ? r1 - rb : NR;                                               \
            float *blk = panel + (size_t)(rb - r0) * (size_t)k;                                    \
            for (int i = 0; i < k; i += RUN) {                                                     \
                int cols = k - i < RUN ? k - i : RUN;                                              \
                for (int a = 0; a < NR; a++) {                                                     \
                    const uint8_t *g = cpu_q4x16_group(w, ldw, rb + a);                            \
                    for (int c = 0; c < RUN; c += WIDTH)                                           \
                        if (a < valid)                                                             \
                            STOREV(&run[a][c],                                                     \
                                   ldv_q4x16(g, (rb + a) % CPU_Q4X16_ROWS, (size_t)(i + c)));      \
                        else                                                                       \
                            memset(&run[a][c], 0, WIDTH * sizeof(float));                          \
                }                                                                                  \
                int c = 0;                                                                         \
                for (; c + WIDTH <= cols; c += WIDTH)                                              \
                    TRANSPOSE(&run[0][c], RUN, blk + (size_t)(i + c) * NR, WIDTH);                 \
                for (; c < cols; c++) /* a partial last block */                                   \
                    for (int a = 0; a < NR; a++)                                                   \
                        blk[(size_t)(i + c) * NR + (size_t)a] = run[a][c];                         \
            }                                                                                      \
        }                                                                                          \
    }

/* The table's pack entry: one panel packer per weight type. PACK_Q4X16 is
 * the Q4X16 one (CPU_DEF_GEMM_PACK_Q4X16) for a table that decodes the
 * layout (qmatmul[2]) without int8 panels, whose quantized prompts come
 * here; NULL for the others, which never send it here. */
#define CPU_DEF_GEMM_PACK_ALL(WIDTH, STOREV, TRANSPOSE, PACK_Q4X16)                                \
    CPU_DEF_GEMM_PACK(f32, WIDTH, STOREV, TRANSPOSE)                                               \
    CPU_DEF_GEMM_PACK(f16, WIDTH, STOREV, TRANSPOSE)                                               \
    CPU_DEF_GEMM_PACK(bf16, WIDTH, STOREV, TRANSPOSE)                                              \
    CPU_DEF_GEMM_PACK(q8, WIDTH, STOREV, TRANSPOSE)                                                \
    CPU_DEF_GEMM_PACK(q4, WIDTH, STOREV, TRANSPOSE)                                                \
    static void gemm_pack(cpu_wtype t, const void *w, size_t ldw, int k, int r0, int r1,           \
                          float *panel) {                                                          \
        static void (*const by_type[CPU_W_N])(const void *, size_t, int, int, int, float *) = {    \
            [CPU_W_F32] = gemm_pack_f32,   [CPU_W_F16] = gemm_pack_f16,                            \
            [CPU_W_BF16] = gemm_pack_bf16, [CPU_W_Q8] = gemm_pack_q8,                              \
            [CPU_W_Q4] = gemm_pack_q4,     [CPU_W_Q4X16] = PACK_Q4X16};                       \
        by_type[t](w, ldw, k, r0, r1, panel);                                                      \
    }

#endif
