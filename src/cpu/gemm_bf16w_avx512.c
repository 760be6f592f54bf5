/* gemm_bf16w.h on AVX-512: 32-row blocks (2 zmm after widening) x 12
 * activation rows, 24 accumulators, as the fp32 GEMM (kernels_driver.h)
 * but reading one 64-byte bf16 step per k instead of two fp32 vectors, and
 * the 12 activations of a step from one packed tile. The fast table has
 * the same shape on vdpbf16ps: a 128-byte step per column pair, 2 dot
 * products per activation row, half the instructions per product. */
#include <immintrin.h>

#include "cpu/gemm_bf16w.h"
#include "cpu/transpose_avx512.h"

#define INLINE static inline __attribute__((always_inline))
#define TB CPU_BF16W_TB
/* Columns per pass over a block: a block's 32 rows x 256 columns of bf16
 * (16 KiB) stay in L1 while every tile of the token block runs over them,
 * with a tile's 12 x 256 activations (12 KiB). With the packed tiles, the
 * tile's time on modernbert-base without AMX went down 3.4% against whole
 * rows (perf, B=3 L=64; 384 columns or prefetching into L2 only: no
 * better). */
#define KC 256

/* The lanes of a 32-row block's half h (rows 16h..) that hold rows < valid. */
INLINE __mmask16 half_mask(int valid, int h) {
    int v = valid - 16 * h;
    return v >= 16 ? 0xffff : v <= 0 ? 0 : (__mmask16)((1u << v) - 1);
}

/* A tile's 12 x 2 accumulators: zero where a pass starts the sums, else
 * the sums so far from y (rows past tb hold none); m0, m1: the halves'
 * lanes of valid rows. */
INLINE void acc_start(__m512 acc[TB][2], const float *y, size_t ldy, int first, __mmask16 m0,
                      __mmask16 m1, int tb) {
    if (first) {
        _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) acc[b][0] = acc[b][1] =
            _mm512_setzero_ps();
        return;
    }
    _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) {
        int in = b < tb;
        acc[b][0] = _mm512_maskz_loadu_ps(in ? m0 : 0, y + (size_t)b * ldy);
        acc[b][1] = _mm512_maskz_loadu_ps(in ? m1 : 0, y + (size_t)b * ldy + 16);
    }
}

INLINE void acc_store(__m512 acc[TB][2], float *y, size_t ldy, __mmask16 m0, __mmask16 m1,
                      int tb) {
    _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) {
        if (b >= tb) break;
        _mm512_mask_storeu_ps(y + (size_t)b * ldy, m0, acc[b][0]);
        _mm512_mask_storeu_ps(y + (size_t)b * ldy + 16, m1, acc[b][1]);
    }
}

/* Tile: 12 activation rows against one block over columns k0..k1, added to
 * the sums already in y unless k0 is 0. Tile tt of the block's nt tiles
 * prefetches the next block's steps i = k0 + tt, k0 + tt + nt, ... (pf:
 * the next block, or this one when there is none). */
INLINE void tile(const uint16_t *p, int k0, int k1, const float *xt, float *y, size_t ldy,
                 int valid, int tb, const char *pf, int tt, int nt) {
    __m512 acc[TB][2];
    const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);
    __mmask16 m0 = half_mask(valid, 0), m1 = half_mask(valid, 1);
    acc_start(acc, y, ldy, k0 == 0, m0, m1, tb);
    int due = tt;
    for (int i = k0; i < k1; i++) {
        __m512i v = _mm512_loadu_si512((const void *)(p + (size_t)i * CPU_BF16W_NR));
        if (due-- == 0) {
            _mm_prefetch(pf + (size_t)i * 64, _MM_HINT_T0);
            due = nt - 1;
        }
        __m512 w0 = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        __m512 w1 = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
        const float *x = xt + (size_t)i * TB;
        _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) {
            __m512 xb = _mm512_set1_ps(x[b]);
            acc[b][0] = _mm512_fmadd_ps(w0, xb, acc[b][0]);
            acc[b][1] = _mm512_fmadd_ps(w1, xb, acc[b][1]);
        }
    }
    acc_store(acc, y, ldy, m0, m1, tb);
}

/* The columns of a 16 x 16 block of 32-bit values (after the transpose:
 * m[c] holds column c, its first TB lanes the tile's rows) into out + c *
 * TB for c < w. The 12 valid lanes of each 4 columns make 3 whole vectors
 * (two-source permutes), so a whole block goes out in 12 full stores
 * rather than 16 overlapping 12-lane ones; a partial one column by
 * column. */
INLINE void store_columns(__m512i m[16], int w, void *out) {
    _Static_assert(TB == 12, "the permutes below pack 12-lane columns");
    const __m512i idx0 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19);
    const __m512i idx1 =
        _mm512_setr_epi32(4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i idx2 =
        _mm512_setr_epi32(8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27);
    int32_t *o = out;
    if (w < 16) {
        for (int c = 0; c < w; c++)
            _mm512_mask_storeu_epi32(o + (size_t)c * TB, (__mmask16)((1u << TB) - 1), m[c]);
        return;
    }
    for (int c = 0; c < 16; c += 4, o += 4 * TB) {
        _mm512_storeu_si512(o, _mm512_permutex2var_epi32(m[c], idx0, m[c + 1]));
        _mm512_storeu_si512(o + 16, _mm512_permutex2var_epi32(m[c + 1], idx1, m[c + 2]));
        _mm512_storeu_si512(o + 32, _mm512_permutex2var_epi32(m[c + 2], idx2, m[c + 3]));
    }
}

/* 16 columns at a time: the tile's rows (and 16 - rows zero rows) as a
 * 16 x 16 block, transposed, then stored column by column. */
static void pack_x(const float *x, size_t ldx, int rows, int c0, int k, float *tile) {
    for (int i = 0; i < k; i += 16) {
        int w = k - i < 16 ? k - i : 16;
        __mmask16 cols = (__mmask16)((1u << w) - 1);
        __m512i m[16];
        for (int b = 0; b < 16; b++)
            m[b] = b < rows ? _mm512_maskz_loadu_epi32(cols, x + (size_t)b * ldx + (size_t)i)
                            : _mm512_setzero_si512();
        cpu_transpose16_epi32(m);
        store_columns(m, w, tile + (size_t)(c0 + i) * TB);
    }
}

/* ---- the fast table: vdpbf16ps on bf16 activation pairs ---- */

/* 32 columns at a time: each row rounded to bf16 (round to nearest even,
 * as gemm_bf16.h's fast GEMM) into 16 pairs, the 16 x 16 block of pairs
 * transposed and stored pair column by pair column. */
static void pack_x_pairs(const float *x, size_t ldx, int rows, int c0, int k, float *tile) {
    for (int i = 0; i < k; i += 32) {
        int w = k - i < 32 ? k - i : 32;
        __mmask16 m0 = w >= 16 ? 0xffff : (__mmask16)((1u << w) - 1);
        __mmask16 m1 = w >= 32 ? 0xffff : w <= 16 ? 0 : (__mmask16)((1u << (w - 16)) - 1);
        __m512i m[16];
        for (int b = 0; b < 16; b++) {
            if (b >= rows) {
                m[b] = _mm512_setzero_si512();
                continue;
            }
            const float *r = x + (size_t)b * ldx + (size_t)i;
            __m512 lo = _mm512_maskz_loadu_ps(m0, r), hi = _mm512_maskz_loadu_ps(m1, r + 16);
            m[b] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
        }
        cpu_transpose16_epi32(m);
        store_columns(m, (w + 1) / 2, (uint32_t *)(void *)tile + (size_t)(c0 + i) / 2 * TB);
    }
}

/* The fast tile: 12 activation rows against one block over column pairs
 * c0..c1, as tile() above (sums in y unless c0 is 0, the next block's
 * steps prefetched by the tiles in turn), a step being the two 64-byte
 * halves of a pair (rows 0-15, rows 16-31). */
INLINE void tile_pairs(const uint16_t *p, int c0, int c1, const uint32_t *xt, float *y,
                       size_t ldy, int valid, int tb, const char *pf, int tt, int nt) {
    __m512 acc[TB][2];
    __mmask16 m0 = half_mask(valid, 0), m1 = half_mask(valid, 1);
    acc_start(acc, y, ldy, c0 == 0, m0, m1, tb);
    int due = tt;
    for (int c = c0; c < c1; c++) {
        const uint16_t *step = p + (size_t)c * 2 * CPU_BF16W_NR;
        __m512bh w0 = (__m512bh)_mm512_loadu_si512((const void *)step);
        __m512bh w1 = (__m512bh)_mm512_loadu_si512((const void *)(step + CPU_BF16W_NR));
        if (due-- == 0) {
            _mm_prefetch(pf + (size_t)c * 128, _MM_HINT_T0);
            _mm_prefetch(pf + (size_t)c * 128 + 64, _MM_HINT_T0);
            due = nt - 1;
        }
        const uint32_t *x = xt + (size_t)c * TB;
        _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) {
            __m512bh xb = (__m512bh)_mm512_set1_epi32((int)x[b]);
            acc[b][0] = _mm512_dpbf16_ps(acc[b][0], w0, xb);
            acc[b][1] = _mm512_dpbf16_ps(acc[b][1], w1, xb);
        }
    }
    acc_store(acc, y, ldy, m0, m1, tb);
}

/* ---- both tables ---- */

/* Every 32-row block of the panel, KC columns at a time, against every
 * tile: tile() on columns, or tile_pairs() on column pairs (PAIRS, the fast
 * table). Each block's tiles prefetch the next block (pf_end: past the
 * last block the caller runs; there, the block itself). */
INLINE void run_blocks(const uint16_t *panel, int k, int rows, const float *xt, float *y,
                       size_t ldy, int n, const void *pf_end, const int PAIRS) {
    int nt = (n + TB - 1) / TB, steps = PAIRS ? k / 2 : k, kc = PAIRS ? KC / 2 : KC;
    size_t block = (size_t)CPU_BF16W_NR * (size_t)k;
    for (int r = 0; r < rows; r += CPU_BF16W_NR) {
        const uint16_t *p = panel + (size_t)r * (size_t)k;
        const char *next = (const char *)(p + block);
        if (next + block * sizeof(uint16_t) > (const char *)pf_end) next = (const char *)p;
        int valid = rows - r < CPU_BF16W_NR ? rows - r : CPU_BF16W_NR;
        for (int s0 = 0; s0 < steps; s0 += kc) {
            int s1 = steps - s0 < kc ? steps : s0 + kc;
            for (int t = 0, tt = 0; t < n; t += TB, tt++) {
                const float *x = xt + (size_t)t * (size_t)k;
                float *yt = y + (size_t)t * ldy + (size_t)r;
                int tb = n - t < TB ? n - t : TB;
                if (PAIRS)
                    tile_pairs(p, s0, s1, (const uint32_t *)(const void *)x, yt, ldy, valid, tb,
                               next, tt, nt);
                else
                    tile(p, s0, s1, x, yt, ldy, valid, tb, next, tt, nt);
            }
        }
    }
}

static void run(const uint16_t *panel, int k, int rows, const float *xt, float *y, size_t ldy,
                int n, const void *pf_end) {
    run_blocks(panel, k, rows, xt, y, ldy, n, pf_end, 0);
}

static void run_pairs(const uint16_t *panel, int k, int rows, const float *xt, float *y,
                      size_t ldy, int n, const void *pf_end) {
    run_blocks(panel, k, rows, xt, y, ldy, n, pf_end, 1);
}

const cpu_gemm_bf16w cpu_gemm_bf16w_avx512 = {cpu_bf16w_pack, pack_x, run};
const cpu_gemm_bf16w cpu_gemm_bf16w_fast_avx512 = {cpu_bf16w_pack_pairs, pack_x_pairs, run_pairs};
