/* gemm_bf16w.h on AVX-512: 32-row blocks (2 zmm after widening) x 12
 * activation rows, 24 accumulators, as the fp32 GEMM (kernels_driver.h)
 * but reading one 64-byte bf16 step per k instead of two fp32 vectors. */
#include <immintrin.h>

#include "cpu/gemm_bf16w.h"

#define INLINE static inline __attribute__((always_inline))
#define TBMAX 12

/* Tile: tb activation rows against one block over all k. Tile tt of the
 * block's nt tiles prefetches the next block's steps i = tt, tt + nt, ...
 * (pf: the next block, or this one when there is none). */
INLINE void tile(const uint16_t *p, int k, const float *x, size_t ldx, float *y, size_t ldy,
                 int valid, const char *pf, int tt, int nt, const int TB) {
    __m512 acc[TBMAX][2];
    const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);
    _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) acc[b][0] = acc[b][1] =
        _mm512_setzero_ps();
    int due = tt;
    for (int i = 0; i < k; i++) {
        __m512i v = _mm512_loadu_si512((const void *)(p + (size_t)i * CPU_BF16W_NR));
        if (due-- == 0) {
            _mm_prefetch(pf + (size_t)i * 64, _MM_HINT_T0);
            due = nt - 1;
        }
        __m512 w0 = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        __m512 w1 = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
        _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) {
            __m512 xb = _mm512_set1_ps(x[(size_t)b * ldx + (size_t)i]);
            acc[b][0] = _mm512_fmadd_ps(w0, xb, acc[b][0]);
            acc[b][1] = _mm512_fmadd_ps(w1, xb, acc[b][1]);
        }
    }
    __mmask16 m0 = valid >= 16 ? 0xffff : (__mmask16)((1u << valid) - 1);
    __mmask16 m1 = valid >= 32 ? 0xffff : valid <= 16 ? 0 : (__mmask16)((1u << (valid - 16)) - 1);
    _Pragma("GCC unroll 12") for (int b = 0; b < TB; b++) {
        _mm512_mask_storeu_ps(y + (size_t)b * ldy, m0, acc[b][0]);
        _mm512_mask_storeu_ps(y + (size_t)b * ldy + 16, m1, acc[b][1]);
    }
}

#define TILE_CASE(N)                                                                               \
    case N:                                                                                        \
        tile(p, k, x, ldx, y, ldy, valid, pf, tt, nt, N);                                          \
        break;

static void tile_any(const uint16_t *p, int k, const float *x, size_t ldx, float *y, size_t ldy,
                     int valid, const char *pf, int tt, int nt, int tb) {
    switch (tb) {
        TILE_CASE(1)
        TILE_CASE(2)
        TILE_CASE(3)
        TILE_CASE(4)
        TILE_CASE(5)
        TILE_CASE(6)
        TILE_CASE(7)
        TILE_CASE(8)
        TILE_CASE(9)
        TILE_CASE(10)
        TILE_CASE(11)
        TILE_CASE(12)
    default:
        break;
    }
}

static void run(const uint16_t *panel, int k, int rows, const float *x, size_t ldx, float *y,
                size_t ldy, int n, const void *pf_end) {
    int nt = (n + TBMAX - 1) / TBMAX;
    size_t block = (size_t)CPU_BF16W_NR * (size_t)k;
    for (int r = 0; r < rows; r += CPU_BF16W_NR) {
        const uint16_t *p = panel + (size_t)r * (size_t)k;
        const char *next = (const char *)(p + block);
        if (next + block * sizeof(uint16_t) > (const char *)pf_end) next = (const char *)p;
        int valid = rows - r < CPU_BF16W_NR ? rows - r : CPU_BF16W_NR;
        for (int t = 0, tt = 0; t < n; t += TBMAX, tt++)
            tile_any(p, k, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy + (size_t)r, ldy, valid,
                     next, tt, nt, n - t < TBMAX ? n - t : TBMAX);
    }
}

const cpu_gemm_bf16w cpu_gemm_bf16w_avx512 = {cpu_bf16w_pack, run};
