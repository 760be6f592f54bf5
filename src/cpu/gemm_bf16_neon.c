/* The prompt GEMM for bf16 weights on arm64 FEAT_BF16 (armv8.6, Apple M2
 * on; compiled with +bf16 and used only where the CPU reports it, on
 * request: cpu_select_bf16). bfmmla multiplies a 2 x 4 bf16 matrix (two
 * weight rows, 4 columns, as stored) by a 4 x 2 one (two tokens' 4
 * activations) into a 2 x 2 block of fp32 sums, so the weights are never
 * widened. The activations are split into bf16 terms as on AVX512-BF16
 * (gemm_bf16_avx512.c): x = hi + lo for the accurate variant, hi alone for
 * the fast one. Panel, per group of 8 rows: for each 4 columns, rows
 * (0,1), (2,3), (4,5), (6,7) as [row][4 bf16] (64 bytes), then the last
 * k % 4 columns as [column][8 rows] bf16, which the tile's caller adds in
 * fp32 (16 bytes a column: the panel fits the fp32 GEMM's k * 32 bytes a
 * group for every k, which quads padded to 4 columns would not at k = 1).
 * A tile is 8 rows x up to 8 tokens: 4 row pairs x 4 token pairs of 2 x 2
 * sums, lanes [r t, r t+1, r+1 t, r+1 t+1]. */
#include <arm_neon.h>
#include <string.h>

#include "base/half.h"
#include "cpu/gemm_bf16.h"
#include "cpu/mmla_neon.h"

#define INLINE static inline __attribute__((always_inline))

#define BG_ROWS 8
#define BT_TOKENS 8
#define BT_PAIRS (BT_TOKENS / 2)
/* Columns of activations split per pass (both terms of 8 tokens on the
 * stack: 2 x 16 KiB). */
#define BT_KC 1024

/* Bytes of one 8-row group of the panel. */
static size_t group_bytes(int k) {
    return (size_t)(k / 4) * 64 + (size_t)(k % 4) * BG_ROWS * 2;
}

static void pack_bf16(cpu_wtype t, const void *w, size_t ldw, int k, int r0, int r1, float *panel) {
    (void)t; /* bf16 only (cpu_kernels.gemm_bf16) */
    int quads = k / 4;
    for (int g = r0; g < r1; g += BG_ROWS) {
        int valid = r1 - g < BG_ROWS ? r1 - g : BG_ROWS;
        uint8_t *dst = (uint8_t *)panel + (size_t)((g - r0) / BG_ROWS) * group_bytes(k);
        const uint8_t *row0 = (const uint8_t *)w + (size_t)g * ldw;
        for (int a = 0; a < BG_ROWS; a++) {
            const uint8_t *row = row0 + (size_t)a * ldw;
            for (int i = 0; i < quads; i++) {
                uint8_t *e = dst + (size_t)i * 64 + (size_t)(a / 2) * 16 + (size_t)(a % 2) * 8;
                if (a < valid)
                    memcpy(e, row + (size_t)i * 8, 8);
                else
                    memset(e, 0, 8);
            }
            for (int c = quads * 4; c < k; c++) {
                uint8_t *e = dst + (size_t)quads * 64 + (size_t)(c - quads * 4) * BG_ROWS * 2 +
                             (size_t)a * 2;
                if (a < valid)
                    memcpy(e, row + (size_t)c * 2, 2);
                else
                    memset(e, 0, 2);
            }
        }
    }
}

/* bf16 lanes widened back to fp32 (exact: a 16-bit shift). */
INLINE float32x4_t widen_lo(bfloat16x8_t h) {
    return vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(vreinterpretq_u16_bf16(h)), 16));
}
INLINE float32x4_t widen_hi(bfloat16x8_t h) {
    return vreinterpretq_f32_u32(vshll_high_n_u16(vreinterpretq_u16_bf16(h), 16));
}

/* 4 activations of tokens t and t + 1 (b NULL: zeros) as bf16 terms
 * [t: 4][t+1: 4]: *hi = rounded, *lo = the remainder rounded. */
INLINE void split_pair(const float *a, const float *b, bfloat16x8_t *hi, bfloat16x8_t *lo) {
    float32x4_t xa = vld1q_f32(a), xb = b ? vld1q_f32(b) : vdupq_n_f32(0);
    bfloat16x8_t h = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(xa), xb);
    *hi = h;
    *lo = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(vsubq_f32(xa, widen_lo(h))),
                              vsubq_f32(xb, widen_hi(h)));
}

/* Quads 0..nq-1 of a group (p) x TB tokens (xh, xl: their pairs, pair q
 * quad i at [q * BT_KC / 4 + i]) into y[b * ldy + row] (added when
 * accumulate; rows < valid). TERMS 1 uses hi only. */
INLINE void bf16_tile(const uint8_t *p, int nq, const bfloat16x8_t *xh, const bfloat16x8_t *xl,
                      float *y, size_t ldy, int valid, int accumulate, const int TB,
                      const int TERMS) {
    const int TP = (TB + 1) / 2;
    float32x4_t acc[4][BT_PAIRS];
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        _Pragma("GCC unroll 4") for (int q = 0; q < TP; q++) acc[r][q] = vdupq_n_f32(0);
    for (int i = 0; i < nq; i++) {
        bfloat16x8_t wv[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) wv[r] =
            vreinterpretq_bf16_u8(vld1q_u8(p + (size_t)i * 64 + (size_t)r * 16));
        _Pragma("GCC unroll 4") for (int q = 0; q < TP; q++) {
            bfloat16x8_t h = xh[q * (BT_KC / 4) + i];
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) acc[r][q] =
                vbfmmlaq_f32(acc[r][q], wv[r], h);
            if (TERMS == 2) {
                bfloat16x8_t l = xl[q * (BT_KC / 4) + i];
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) acc[r][q] =
                    vbfmmlaq_f32(acc[r][q], wv[r], l);
            }
        }
    }
    for (int r = 0; r < 4; r++)
        for (int q = 0; q < TP; q++)
            cpu_mmla_store(y, ldy, acc[r][q], 2 * r, 2 * q, valid, TB, accumulate);
}

#define BT_CASE(TB, TERMS)                                                                         \
    case TB:                                                                                       \
        bf16_tile(p, nq, xh, xl, y, ldy, valid, accumulate, TB, TERMS);                            \
        break;
#define BT_TILES(TERMS)                                                                            \
    switch (tb) {                                                                                  \
        BT_CASE(1, TERMS)                                                                          \
        BT_CASE(2, TERMS)                                                                          \
        BT_CASE(3, TERMS)                                                                          \
        BT_CASE(4, TERMS)                                                                          \
        BT_CASE(5, TERMS)                                                                          \
        BT_CASE(6, TERMS)                                                                          \
        BT_CASE(7, TERMS)                                                                          \
        BT_CASE(8, TERMS)                                                                          \
    default:                                                                                       \
        break;                                                                                     \
    }

static void bf16_tile_any(const uint8_t *p, int nq, const bfloat16x8_t *xh, const bfloat16x8_t *xl,
                          float *y, size_t ldy, int valid, int accumulate, int tb, int terms) {
    if (terms == 2) {
        BT_TILES(2)
    } else {
        BT_TILES(1)
    }
}

/* The last k % 4 columns of a group ([column][8 rows] bf16 at tail) for tb
 * tokens, in fp32, added to y when accumulate. */
static void tail_columns(const uint8_t *tail, int cols, const float *x, size_t ldx, int k0,
                         float *y, size_t ldy, int valid, int tb, int accumulate) {
    for (int b = 0; b < tb; b++)
        for (int a = 0; a < valid; a++) {
            float s = accumulate ? y[(size_t)b * ldy + (size_t)a] : 0.0f;
            for (int c = 0; c < cols; c++) {
                uint16_t h;
                memcpy(&h, tail + ((size_t)c * BG_ROWS + (size_t)a) * 2, 2);
                s += x[(size_t)b * ldx + (size_t)(k0 + c)] * nc_bf16_to_f32(h);
            }
            y[(size_t)b * ldy + (size_t)a] = s;
        }
}

static void run_terms(const float *panel, int k, int rows, const float *x, size_t ldx, float *y,
                      size_t ldy, int n, int terms) {
    bfloat16x8_t xh[BT_PAIRS * (BT_KC / 4)], xl[BT_PAIRS * (BT_KC / 4)];
    int kb = k / 4 * 4, groups = (rows + BG_ROWS - 1) / BG_ROWS;
    size_t ldp = group_bytes(k);
    for (int t = 0; t < n; t += BT_TOKENS) {
        int tb = n - t < BT_TOKENS ? n - t : BT_TOKENS;
        const float *xt = x + (size_t)t * ldx;
        for (int k0 = 0; k0 < kb; k0 += BT_KC) {
            int kc = kb - k0 < BT_KC ? kb - k0 : BT_KC;
            for (int q = 0; 2 * q < tb; q++)
                for (int i = 0; i < kc; i += 4) {
                    const float *a = xt + (size_t)(2 * q) * ldx + (size_t)(k0 + i);
                    split_pair(a, 2 * q + 1 < tb ? a + ldx : NULL, &xh[q * (BT_KC / 4) + i / 4],
                               &xl[q * (BT_KC / 4) + i / 4]);
                }
            for (int g = 0; g < groups; g++)
                bf16_tile_any((const uint8_t *)panel + (size_t)g * ldp + (size_t)k0 / 4 * 64,
                              kc / 4, xh, xl, y + (size_t)t * ldy + (size_t)g * BG_ROWS, ldy,
                              rows - g * BG_ROWS, k0 > 0, tb, terms);
        }
        if (kb < k)
            for (int g = 0; g < groups; g++)
                tail_columns((const uint8_t *)panel + (size_t)g * ldp + (size_t)kb / 4 * 64, k - kb,
                             xt, ldx, kb, y + (size_t)t * ldy + (size_t)g * BG_ROWS, ldy,
                             rows - g * BG_ROWS < BG_ROWS ? rows - g * BG_ROWS : BG_ROWS, tb,
                             kb > 0);
    }
}

CPU_DEF_BF16_GEMMS(cpu_gemm_bf16_neon, BG_ROWS, pack_bf16, run_terms)
