/* The prompt GEMM for bf16 weights on AVX512-BF16 (vdpbf16ps): one
 * instruction multiplies 16 weight rows x 2 columns, as stored, by the same
 * 2 activations broadcast and adds both products into each row's fp32 sum,
 * so the weights are never widened. The activations are split into bf16
 * terms: x = hi + lo (hi = x rounded to bf16, lo = the remainder rounded;
 * 16 significant bits, relative error <= 2^-17) for the accurate variant,
 * hi alone (2^-9) for the fast one, which issues half the instructions.
 * Outer-product form as the fp32 GEMM (kernels_driver.h): panels of 16 rows
 * x 2 columns per 64-byte vector, 2 row groups x 12 tokens of accumulators
 * in registers, results stored along the row axis. */
#include <immintrin.h>
#include <string.h>

#include "cpu/gemm_bf16.h"
#include "cpu/store16_avx512.h"
#include "cpu/transpose_avx512.h"

#define INLINE static inline __attribute__((always_inline))

/* Rows per panel group, tokens per tile, columns of activations split per
 * pass (the terms of BT_TOKENS rows on the stack: 2 x 12 x 2 KiB). */
#define BG_ROWS 16
#define BT_TOKENS 12
#define BT_KC 1024
#define BT_PAIRS (BT_KC / 2)
/* How far ahead along each of the 16 rows the pack prefetches: a task's
 * rows come cold from memory, 16 streams at once, and the pack waited on
 * them (17% of a bf16-fast pp512 on the Zen 5 VM); 512 bytes ahead made
 * pp512 10% faster there (558 -> 619 tok/s, 2 threads), 1024 and 256
 * less or no better. */
#define PACK_PREFETCH 512

/* Prefetches the PACK_PREFETCH bytes from `at` of rows a0..a1 (row stride
 * ldw), where the pack reads next. */
INLINE void prefetch_rows(const uint8_t *at, size_t ldw, int a0, int a1) {
    for (int a = a0; a < a1; a++)
        for (int b = 0; b < PACK_PREFETCH; b += 64)
            _mm_prefetch((const char *)(at + (size_t)a * ldw + b), _MM_HINT_T0);
}

/* The panel: group g (rows r0 + 16g..) at g * pairs * 64 bytes, column pair
 * c of its 16 rows at + c * 64 ([row][2 bf16]); rows past r1 and the
 * column past an odd k are zero. */
static void pack_bf16(cpu_wtype t, const void *w, size_t ldw, int k, int r0, int r1, float *panel) {
    (void)t; /* bf16 only (cpu_kernels.gemm_bf16) */
    int pairs = (k + 1) / 2;
    size_t row_bytes = (size_t)k * 2;
    /* the first group's row starts: nothing ahead of them brought them in */
    prefetch_rows((const uint8_t *)w + (size_t)r0 * ldw, ldw, 0,
                  r1 - r0 < BG_ROWS ? r1 - r0 : BG_ROWS);
    for (int g = r0; g < r1; g += BG_ROWS) {
        int valid = r1 - g < BG_ROWS ? r1 - g : BG_ROWS;
        int next = r1 - g - BG_ROWS < BG_ROWS ? r1 - g - BG_ROWS : BG_ROWS; /* <= 0: none */
        uint8_t *dst = (uint8_t *)panel + (size_t)((g - r0) / BG_ROWS) * (size_t)pairs * 64;
        const uint8_t *row0 = (const uint8_t *)w + (size_t)g * ldw;
        for (int i = 0; i < k; i += 32) { /* 32 columns = 16 pairs = one transpose */
            int cols = k - i < 32 ? k - i : 32;
            __mmask32 m = cols == 32 ? ~0u : (1u << cols) - 1;
            __m512i v[16];
            size_t ahead = (size_t)i * 2 + PACK_PREFETCH;
            /* ahead in each row, then past its end: the next group's row
             * starts (a miss a masked load makes leaves the prefetcher idle) */
            for (int a = 0; a < valid; a++)
                if (ahead < row_bytes)
                    _mm_prefetch((const char *)(row0 + (size_t)a * ldw + ahead), _MM_HINT_T0);
                else if (a < next)
                    _mm_prefetch(
                        (const char *)(row0 + (size_t)(BG_ROWS + a) * ldw + (ahead - row_bytes)),
                        _MM_HINT_T0);
            for (int a = 0; a < BG_ROWS; a++) {
                const void *src = row0 + (size_t)a * ldw + (size_t)i * 2;
                v[a] = a >= valid   ? _mm512_setzero_si512()
                       : cols == 32 ? _mm512_loadu_si512(src)
                                    : _mm512_maskz_loadu_epi16(m, src);
            }
            cpu_transpose16_epi32(v);
            for (int c = 0; c < (cols + 1) / 2; c++)
                _mm512_storeu_si512((void *)(dst + (size_t)(i / 2 + c) * 64), v[c]);
        }
    }
}

/* 32 activations from p (n < 32: the rest zero) as bf16 terms in column
 * order: *hi = x rounded, *lo = (x - hi) rounded. */
INLINE void split32(const float *p, int n, __m512i *hi, __m512i *lo) {
    __mmask16 m0 = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
    __mmask16 m1 = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
    __m512 a = _mm512_maskz_loadu_ps(m0, p), b = _mm512_maskz_loadu_ps(m1, p + 16);
    __m512bh h = _mm512_cvtne2ps_pbh(b, a);
    __m512 ha = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256((__m512i)h)), 16));
    __m512 hb = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64((__m512i)h, 1)), 16));
    *hi = (__m512i)h;
    *lo = (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(b, hb), _mm512_sub_ps(a, ha));
}

/* Pairs 0..np-1 of RG groups (p, group stride ldp bytes) x TB tokens (xh,
 * xl: their bf16 pairs at stride ldx pairs) into y[b * ldy + row] (added
 * to y when accumulate; the first `valid` rows). TERMS 1 uses hi only. */
INLINE void bf16_tile(const uint8_t *p, size_t ldp, int np, const uint32_t *xh, const uint32_t *xl,
                      size_t ldx, float *y, size_t ldy, int valid, int accumulate, const int RG,
                      const int TB, const int TERMS) {
    __m512 acc[2][BT_TOKENS];
    _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++)
        _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) acc[g][b] = _mm512_setzero_ps();
    for (int c = 0; c < np; c++) {
        __m512bh wv[2];
        _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) wv[g] =
            (__m512bh)_mm512_loadu_si512((const void *)(p + (size_t)g * ldp + (size_t)c * 64));
        _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) {
            __m512bh h = (__m512bh)_mm512_set1_epi32((int)xh[(size_t)b * ldx + c]);
            _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) acc[g][b] =
                _mm512_dpbf16_ps(acc[g][b], wv[g], h);
            if (TERMS == 2) {
                __m512bh l = (__m512bh)_mm512_set1_epi32((int)xl[(size_t)b * ldx + c]);
                _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) acc[g][b] =
                    _mm512_dpbf16_ps(acc[g][b], wv[g], l);
            }
        }
    }
    _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++)
        _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) cpu_store16(
            y + (size_t)b * ldy + (size_t)g * BG_ROWS, acc[g][b], valid - g * BG_ROWS, accumulate);
}

#define BT_CASE(RG, TB, TERMS)                                                                     \
    case TB:                                                                                       \
        bf16_tile(p, ldp, np, xh, xl, ldx, y, ldy, valid, accumulate, RG, TB, TERMS);              \
        break;
#define BT_CASE4(RG, N, TERMS)                                                                     \
    BT_CASE(RG, N, TERMS)                                                                          \
    BT_CASE(RG, N + 1, TERMS) BT_CASE(RG, N + 2, TERMS) BT_CASE(RG, N + 3, TERMS)
#define BT_TILES(RG, TERMS)                                                                        \
    switch (tb) {                                                                                  \
        BT_CASE4(RG, 1, TERMS)                                                                     \
        BT_CASE4(RG, 5, TERMS)                                                                     \
        BT_CASE4(RG, 9, TERMS)                                                                     \
    default:                                                                                       \
        break;                                                                                     \
    }

static void bf16_tile_any(const uint8_t *p, size_t ldp, int np, const uint32_t *xh,
                          const uint32_t *xl, size_t ldx, float *y, size_t ldy, int valid,
                          int accumulate, int rg, int tb, int terms) {
    if (terms == 2) {
        if (rg == 2) {
            BT_TILES(2, 2)
        } else {
            BT_TILES(1, 2)
        }
    } else {
        if (rg == 2) {
            BT_TILES(2, 1)
        } else {
            BT_TILES(1, 1)
        }
    }
}

/* Token tile t..t+tb against columns k0..k0+kc of every group of the
 * panel: the tiles of RG 2 groups, then a last single one. */
static void run_chunk(const float *panel, size_t ldp, int k0, int kc, int rows, const uint32_t *xh,
                      const uint32_t *xl, size_t ldx, float *y, size_t ldy, int tb, int terms) {
    int groups = (rows + BG_ROWS - 1) / BG_ROWS;
    for (int g = 0; g < groups; g += 2)
        bf16_tile_any((const uint8_t *)panel + (size_t)g * ldp + (size_t)k0 / 2 * 64, ldp,
                      (kc + 1) / 2, xh, xl, ldx, y + (size_t)g * BG_ROWS, ldy, rows - g * BG_ROWS,
                      k0 > 0, groups - g >= 2 ? 2 : 1, tb, terms);
}

/* Row t of x (k values) as its bf16 terms: pairs at hi (and lo for two). */
static void split_row(const float *x, int k, uint32_t *hi, uint32_t *lo, int terms) {
    for (int i = 0; i < k; i += 32) {
        __m512i h, l;
        split32(x + i, k - i, &h, &l);
        _mm512_storeu_si512((void *)&hi[i / 2], h);
        if (terms == 2) _mm512_storeu_si512((void *)&lo[i / 2], l);
    }
}

/* Pairs per row of the converted activations: k rounded up to 32 (split_row
 * stores whole vectors). */
static size_t x_pairs(int k) {
    return (size_t)(k + 31) / 32 * 16;
}

static void run_terms(const float *panel, int k, int rows, const float *x, size_t ldx, float *y,
                      size_t ldy, int n, int terms) {
    uint32_t xh[BT_TOKENS * BT_PAIRS] __attribute__((aligned(64)));
    uint32_t xl[BT_TOKENS * BT_PAIRS] __attribute__((aligned(64)));
    size_t ldp = (size_t)((k + 1) / 2) * 64;
    for (int t = 0; t < n; t += BT_TOKENS) {
        int tb = n - t < BT_TOKENS ? n - t : BT_TOKENS;
        for (int k0 = 0; k0 < k; k0 += BT_KC) {
            int kc = k - k0 < BT_KC ? k - k0 : BT_KC;
            for (int b = 0; b < tb; b++)
                split_row(x + (size_t)(t + b) * ldx + k0, kc, xh + b * BT_PAIRS, xl + b * BT_PAIRS,
                          terms);
            run_chunk(panel, ldp, k0, kc, rows, xh, xl, BT_PAIRS, y + (size_t)t * ldy, ldy, tb,
                      terms);
        }
    }
}

/* The activations converted once per product (cpu_gemm_kernels.x_prep):
 * row t's hi pairs at xb + t * x_pairs(k), then the lo plane from
 * xb + n * x_pairs(k) for two terms; every task then reads them instead of
 * converting all n rows again for its 64 weight rows (7% of the tile's
 * time at k = 1024, pp512 on Zen 4). */
static size_t x_bytes(int n, int k) {
    return 2 * (size_t)n * x_pairs(k) * sizeof(uint32_t);
}

static void x_prep_terms(const float *x, int n, int k, int t, void *xb, int terms) {
    uint32_t *hi = (uint32_t *)xb + (size_t)t * x_pairs(k);
    split_row(x, k, hi, hi + (size_t)n * x_pairs(k), terms);
}

static void run_x_terms(const float *panel, int k, int rows, const void *xb, int n, float *y,
                        size_t ldy, int terms) {
    const uint32_t *xh = xb, *xl = xh + (size_t)n * x_pairs(k);
    size_t ldp = (size_t)((k + 1) / 2) * 64, ldx = x_pairs(k);
    for (int t = 0; t < n; t += BT_TOKENS) {
        int tb = n - t < BT_TOKENS ? n - t : BT_TOKENS;
        for (int k0 = 0; k0 < k; k0 += BT_KC)
            run_chunk(panel, ldp, k0, k - k0 < BT_KC ? k - k0 : BT_KC, rows,
                      xh + (size_t)t * ldx + k0 / 2, xl + (size_t)t * ldx + k0 / 2, ldx,
                      y + (size_t)t * ldy, ldy, tb, terms);
    }
}

CPU_DEF_BF16_GEMMS_X(cpu_gemm_bf16_avx512, BG_ROWS, pack_bf16, run_terms, x_bytes, x_prep_terms,
                     run_x_terms)
