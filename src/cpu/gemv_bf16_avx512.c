/* Decoding against bf16 weights on vdpbf16ps (gemv_bf16.h). One 64-byte
 * load brings 32 weights of a row, as stored; one vdpbf16ps per activation
 * term multiplies them by 32 bf16 activations and adds the pairs into 16
 * fp32 lanes, reduced once per row at the end. The fp32-widening tile
 * (kernels_avx512.c) spends two integer ops and two FMAs per 32 weights,
 * so per byte of weights this issues 1/2 (one term) to 1 (three terms) of
 * its vector instructions.
 *
 * Activations are split into bf16 terms once per call (per K chunk) into a
 * stack buffer; rows go through in tiles of RB rows (one activation row)
 * or 4 rows x up to 4 activation rows, each weight vector serving every
 * token of the tile. Software prefetch PF tiles ahead (0: the hardware's
 * alone), never past the range's last row: the right distance depends on
 * the CPU's prefetchers, which is what cpu_wisdom measures. Two variants
 * read each 64 bytes as two 32-byte loads (r1y: a Zen 4 streamed those
 * faster), one of them (eo-r1y) with fp32 FMAs instead of dot products;
 * eo-r4-pf2 and eo-r8-pf1 take those FMAs in dp3's row tiles (on an
 * Emerald Rapids VM they decoded 2-3% faster than the fp32-widening tile,
 * which reads in the same order: docs/performance.md). */
#include <immintrin.h>
#include <stdint.h>

#include "cpu/gemv_bf16.h"

#define INLINE static inline __attribute__((always_inline))

/* bf16 values of split activations on the stack (48 KiB): one activation
 * row of up to 8192 columns with 3 terms per K chunk. */
#define XT_VALUES (3 * 8192)
/* Activation rows per tile when several are decoded together. */
#define TB_MAX 4

INLINE __m512 widen_lo(__m512i h) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
}
INLINE __m512 widen_hi(__m512i h) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
}

/* x[0..kc) as TERMS bf16 terms in column order, term j at out + j * ld,
 * zero past kc up to the next multiple of 32. With 3 terms each remainder
 * is exact in fp32 and the last one fits bf16: x1 + x2 + x3 == x. */
INLINE void split_terms(const float *x, int kc, uint16_t *out, size_t ld, const int TERMS) {
    for (int i = 0; i < kc; i += 32) {
        int left = kc - i;
        __mmask16 m0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
        __mmask16 m1 = left >= 32 ? 0xffff : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
        __m512 a = _mm512_maskz_loadu_ps(m0, x + i), b = _mm512_maskz_loadu_ps(m1, x + i + 16);
        for (int j = 0; j < TERMS; j++) {
            __m512i h = (__m512i)_mm512_cvtne2ps_pbh(b, a);
            _mm512_store_si512((void *)(out + (size_t)j * ld + i), h);
            if (j + 1 < TERMS) {
                a = _mm512_sub_ps(a, widen_lo(h));
                b = _mm512_sub_ps(b, widen_hi(h));
            }
        }
    }
}

/* acc[a][b] += the 32 columns from i of weight vector wv[a] and token b's
 * activation terms. */
INLINE void dot_step(__m512 acc[8][TB_MAX], const __m512bh *wv, const uint16_t *xt, size_t ldt,
                     int i, const int RB, const int TB, const int TERMS) {
    _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++)
        _Pragma("GCC unroll 3") for (int j = 0; j < TERMS; j++) {
            __m512bh xv = (__m512bh)_mm512_load_si512(
                (const void *)(xt + (size_t)(b * TERMS + j) * ldt + (size_t)i));
            _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) acc[a][b] =
                _mm512_dpbf16_ps(acc[a][b], wv[a], xv);
        }
}

/* y[b*ldy + r + a] (+)= sum_{i<kc} w[(r+a)*ldw + i] * x_b[i] for a < RB,
 * b < TB, x_b's terms at xt + b * TERMS * ldt + j * ldt. */
INLINE void tile(const uint16_t *w, size_t ldw, const uint16_t *xt, size_t ldt, float *y,
                 size_t ldy, int kc, int r, int r_end, int accumulate, const int RB, const int TB,
                 const int TERMS, const int PF) {
    __m512 acc[8][TB_MAX];
    _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++)
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = _mm512_setzero_ps();
    const uint16_t *wr = w + (size_t)r * ldw;
    int prefetch = PF > 0 && r + (PF + 1) * RB <= r_end;
    int i = 0;
    for (; i + 32 <= kc; i += 32) {
        __m512bh wv[8];
        _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) {
            if (prefetch) __builtin_prefetch(wr + ((size_t)(a + PF * RB) * ldw + (size_t)i));
            wv[a] = (__m512bh)_mm512_loadu_si512((const void *)(wr + (size_t)a * ldw + (size_t)i));
        }
        dot_step(acc, wv, xt, ldt, i, RB, TB, TERMS);
    }
    if (i < kc) { /* the last columns: masked loads never touch past the row */
        __mmask32 m = (__mmask32)((1ull << (kc - i)) - 1);
        __m512bh wv[8];
        _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) wv[a] =
            (__m512bh)_mm512_maskz_loadu_epi16(m, wr + (size_t)a * ldw + (size_t)i);
        dot_step(acc, wv, xt, ldt, i, RB, TB, TERMS);
    }
    _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++)
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {
            float s = _mm512_reduce_add_ps(acc[a][b]), *yp = y + (size_t)b * ldy + (size_t)(r + a);
            *yp = accumulate ? *yp + s : s;
        }
}

/* 32 weights of a row: one 64-byte load, or (YL) two 32-byte loads joined. */
INLINE __m512bh load_w(const uint16_t *w, const int YL) {
    if (!YL) return (__m512bh)_mm512_loadu_si512((const void *)w);
    __m256i lo = _mm256_loadu_si256((const __m256i *)w),
            hi = _mm256_loadu_si256((const __m256i *)(w + 16));
    return (__m512bh)_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* One row, one activation row, whole lines in order: with rows read one
 * after another a task's weights are a single sequential stream (the
 * pattern hardware prefetchers follow best); 4 accumulators over
 * consecutive 32-column steps hide the dot product's latency. YL: each
 * step's weights in two 32-byte loads, two steps per iteration. On a Zen 4
 * VM at its higher memory level that streamed 15% faster from DRAM with
 * one term (as a plain sum streams faster in 32-byte loads than in 64-byte
 * ones), and no faster with three (docs/performance.md). */
INLINE void row_seq(const uint16_t *w, size_t ldw, const uint16_t *xt, size_t ldt, float *y, int kc,
                    int r, int accumulate, const uint16_t *pf_end, const int TERMS, const int PF,
                    const int YL) {
    const int U = YL ? 2 : 4; /* steps per iteration, an accumulator each */
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    const uint16_t *wr = w + (size_t)r * ldw;
    int i = 0;
    for (; i + 32 * U <= kc; i += 32 * U)
        _Pragma("GCC unroll 4") for (int u = 0; u < U; u++) {
            /* PF lines ahead in the task's stream, never past its end */
            const uint16_t *ahead = wr + i + 32 * u + 32 * PF;
            if (PF > 0 && ahead < pf_end) _mm_prefetch((const char *)ahead, _MM_HINT_T0);
            __m512bh wv = load_w(wr + i + 32 * u, YL);
            _Pragma("GCC unroll 3") for (int j = 0; j < TERMS; j++) acc[u] = _mm512_dpbf16_ps(
                acc[u], wv,
                (__m512bh)_mm512_load_si512((const void *)(xt + (size_t)j * ldt + i + 32 * u)));
        }
    for (; i < kc; i += 32) { /* the last steps; the last columns masked */
        __mmask32 m = kc - i >= 32 ? ~0u : (__mmask32)((1ull << (kc - i)) - 1);
        __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, wr + i);
        _Pragma("GCC unroll 3") for (int j = 0; j < TERMS; j++) acc[0] = _mm512_dpbf16_ps(
            acc[0], wv, (__m512bh)_mm512_load_si512((const void *)(xt + (size_t)j * ldt + i)));
    }
    __m512 sum = YL ? _mm512_add_ps(acc[0], acc[1])
                    : _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    float s = _mm512_reduce_add_ps(sum);
    y[r] = accumulate ? y[r] + s : s;
}

/* Rows r0..r1 of one K chunk for TB activation rows: RB-row tiles (one
 * activation row; RB 1: row_seq) or 4-row tiles (several), then single
 * rows. */
INLINE void rows_of_chunk(const uint16_t *w, size_t ldw, const uint16_t *xt, size_t ldt, float *y,
                          size_t ldy, int kc, int r0, int r1, int accumulate, const int RB,
                          const int TB, const int TERMS, const int PF, const int YL) {
    if (TB == 1 && RB == 1) {
        const uint16_t *pf_end = w + (size_t)(r1 - 1) * ldw + (size_t)kc;
        for (int r = r0; r < r1; r++)
            row_seq(w, ldw, xt, ldt, y, kc, r, accumulate, pf_end, TERMS, PF, YL);
        return;
    }
    const int rb = TB == 1 ? RB : 4;
    int r = r0;
    for (; r + rb <= r1; r += rb)
        tile(w, ldw, xt, ldt, y, ldy, kc, r, r1, accumulate, rb, TB, TERMS, PF);
    for (; r < r1; r++)
        tile(w, ldw, xt, ldt, y, ldy, kc, r, r1, accumulate, 1, TB, TERMS, 0);
}

INLINE void gemv(const void *w, size_t ldw, const float *x, size_t ldx, float *y, size_t ldy, int n,
                 int k, int r0, int r1, const int RB, const int TERMS, const int PF,
                 const int YL) {
    uint16_t xt[XT_VALUES] __attribute__((aligned(64)));
    const uint16_t *wb = (const uint16_t *)w;
    for (int t0 = 0; t0 < n; t0 += TB_MAX) {
        int tb = n - t0 < TB_MAX ? n - t0 : TB_MAX;
        /* columns per chunk: every token's terms fit xt */
        int kch = XT_VALUES / (tb * TERMS) / 32 * 32;
        for (int k0 = 0; k0 < k; k0 += kch) {
            int kc = k - k0 < kch ? k - k0 : kch;
            for (int b = 0; b < tb; b++)
                split_terms(x + (size_t)(t0 + b) * ldx + (size_t)k0, kc,
                            xt + (size_t)b * TERMS * (size_t)kch, (size_t)kch, TERMS);
            const uint16_t *wk = wb + k0;
            float *yt = y + (size_t)t0 * ldy;
            switch (tb) {
            case 1:
                rows_of_chunk(wk, ldw, xt, (size_t)kch, yt, ldy, kc, r0, r1, k0 > 0, RB, 1, TERMS,
                              PF, YL);
                break;
            case 2:
                rows_of_chunk(wk, ldw, xt, (size_t)kch, yt, ldy, kc, r0, r1, k0 > 0, RB, 2, TERMS,
                              PF, YL);
                break;
            case 3:
                rows_of_chunk(wk, ldw, xt, (size_t)kch, yt, ldy, kc, r0, r1, k0 > 0, RB, 3, TERMS,
                              PF, YL);
                break;
            default:
                rows_of_chunk(wk, ldw, xt, (size_t)kch, yt, ldy, kc, r0, r1, k0 > 0, RB, 4, TERMS,
                              PF, YL);
                break;
            }
        }
    }
}

/* ---- exact products in fp32 FMAs, weights split even/odd ----
 * The accurate contract without bf16 dot products: a 32-bit lane of 32
 * loaded weights holds columns 2l (low half) and 2l+1 (high half), so one
 * shift and one mask make both exact fp32 values in place, multiplied by
 * the activations split once per call into even and odd columns. Per 64
 * bytes of weights: two 32-byte loads, two integer ops and two FMAs,
 * against three vdpbf16ps and their three activation loads for dp3. On a
 * Zen 4 VM at its higher memory level it streamed 0.87 of a plain 32-byte
 * sum from DRAM, dp3-r1-pf0 0.75 (docs/performance.md). */

/* x[0..kc) as even columns at xe and odd ones at xo, 16 of each per 32
 * columns, zero past kc up to the next multiple of 32. */
INLINE void split_even_odd(const float *x, int kc, float *xe, float *xo) {
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int i = 0; i < kc; i += 32) {
        int left = kc - i;
        __mmask16 m0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
        __mmask16 m1 = left >= 32 ? 0xffff : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
        __m512 a = _mm512_maskz_loadu_ps(m0, x + i), b = _mm512_maskz_loadu_ps(m1, x + i + 16);
        _mm512_store_ps(xe + i / 2, _mm512_permutex2var_ps(a, even, b));
        _mm512_store_ps(xo + i / 2, _mm512_permutex2var_ps(a, odd, b));
    }
}

/* acc_even, acc_odd += 32 columns of weights wv against their activations. */
INLINE void eo_step(__m512i wv, const float *xe, const float *xo, __m512 *acc_even,
                    __m512 *acc_odd) {
    const __m512i high = _mm512_set1_epi32((int)0xffff0000u);
    *acc_odd = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(wv, high)), _mm512_load_ps(xo),
                               *acc_odd);
    *acc_even = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(wv, 16)), _mm512_load_ps(xe),
                                *acc_even);
}

/* One row as row_seq reads it: 4 steps per iteration, an even and an odd
 * accumulator each. */
INLINE void row_eo(const uint16_t *wr, const float *xe, const float *xo, float *y, int kc,
                   int accumulate) {
    __m512 acc[8];
    _Pragma("GCC unroll 8") for (int a = 0; a < 8; a++) acc[a] = _mm512_setzero_ps();
    int i = 0;
    for (; i + 128 <= kc; i += 128)
        _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++) eo_step(
            (__m512i)load_w(wr + i + 32 * u, 1), xe + (i + 32 * u) / 2, xo + (i + 32 * u) / 2,
            &acc[u], &acc[4 + u]);
    for (; i < kc; i += 32) { /* the last steps; the last columns masked */
        __mmask32 m = kc - i >= 32 ? ~0u : (__mmask32)((1ull << (kc - i)) - 1);
        eo_step(_mm512_maskz_loadu_epi16(m, wr + i), xe + i / 2, xo + i / 2, &acc[0], &acc[4]);
    }
    _Pragma("GCC unroll 4") for (int a = 0; a < 4; a++) acc[a] = _mm512_add_ps(acc[a], acc[4 + a]);
    float s = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
    *y = accumulate ? *y + s : s;
}

/* RB rows side by side, as dp3's tiles read them (a 64-byte load of each
 * row per step; the same columns of the tile PF tiles ahead asked for),
 * an even and an odd accumulator per row: the fp32-widening tile's reading
 * order with the even/odd widening. */
INLINE void tile_eo(const uint16_t *w, size_t ldw, const float *xe, const float *xo, float *y,
                    int kc, int r, int r_end, int accumulate, const int RB, const int PF) {
    __m512 acc_even[8], acc_odd[8];
    _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) acc_even[a] = acc_odd[a] =
        _mm512_setzero_ps();
    const uint16_t *wr = w + (size_t)r * ldw;
    int prefetch = PF > 0 && r + (PF + 1) * RB <= r_end;
    int i = 0;
    for (; i + 32 <= kc; i += 32)
        _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) {
            if (prefetch) __builtin_prefetch(wr + ((size_t)(a + PF * RB) * ldw + (size_t)i));
            eo_step(_mm512_loadu_si512((const void *)(wr + (size_t)a * ldw + (size_t)i)),
                    xe + i / 2, xo + i / 2, &acc_even[a], &acc_odd[a]);
        }
    if (i < kc) { /* the last columns: masked loads never touch past the row */
        __mmask32 m = (__mmask32)((1ull << (kc - i)) - 1);
        _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) eo_step(
            _mm512_maskz_loadu_epi16(m, wr + (size_t)a * ldw + (size_t)i), xe + i / 2, xo + i / 2,
            &acc_even[a], &acc_odd[a]);
    }
    _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) {
        float s = _mm512_reduce_add_ps(_mm512_add_ps(acc_even[a], acc_odd[a]));
        y[r + a] = accumulate ? y[r + a] + s : s;
    }
}

/* One activation row through the even/odd split, per K chunk: rows r0..r1
 * one after another (RB 1: row_eo, 32-byte loads) or in RB-row tiles (the
 * rows left over one at a time). Several activation rows take dp3's
 * tiles, whose products are exact too. */
INLINE void gemv_eo(const void *w, size_t ldw, const float *x, size_t ldx, float *y, size_t ldy,
                    int n, int k, int r0, int r1, const int RB, const int PF) {
    if (n != 1) {
        gemv(w, ldw, x, ldx, y, ldy, n, k, r0, r1, 1, 3, 0, 0);
        return;
    }
    float xeo[XT_VALUES / 2] __attribute__((aligned(64)));
    const int kch = XT_VALUES / 2 / 32 * 32;
    const uint16_t *wb = (const uint16_t *)w;
    for (int k0 = 0; k0 < k; k0 += kch) {
        int kc = k - k0 < kch ? k - k0 : kch;
        split_even_odd(x + k0, kc, xeo, xeo + kch / 2);
        int r = r0;
        for (; RB > 1 && r + RB <= r1; r += RB)
            tile_eo(wb + k0, ldw, xeo, xeo + kch / 2, y, kc, r, r1, k0 > 0, RB, PF);
        for (; r < r1; r++)
            row_eo(wb + (size_t)r * ldw + (size_t)k0, xeo, xeo + kch / 2, y + r, kc, k0 > 0);
    }
}

#define DEF_GEMV_L(NAME, RB, TERMS, PF, YL)                                                        \
    static void NAME(const void *w, size_t ldw, const float *x, size_t ldx, float *y, size_t ldy,  \
                     int n, int k, int r0, int r1) {                                               \
        gemv(w, ldw, x, ldx, y, ldy, n, k, r0, r1, RB, TERMS, PF, YL);                             \
    }
#define DEF_GEMV(NAME, RB, TERMS, PF) DEF_GEMV_L(NAME, RB, TERMS, PF, 0)
DEF_GEMV(dp3_r8_p1, 8, 3, 1)
DEF_GEMV(dp3_r8_p2, 8, 3, 2)
DEF_GEMV(dp3_r8_p0, 8, 3, 0)
DEF_GEMV(dp3_r4_p2, 4, 3, 2)
DEF_GEMV(dp1_r8_p1, 8, 1, 1)
DEF_GEMV(dp1_r8_p2, 8, 1, 2)
DEF_GEMV(dp1_r8_p0, 8, 1, 0)
DEF_GEMV(dp1_r4_p2, 4, 1, 2)
DEF_GEMV(dp3_r1_p0, 1, 3, 0)
DEF_GEMV(dp1_r1_p0, 1, 1, 0)
/* r1: PF counts 64-byte lines ahead in the task's stream, not tiles */
DEF_GEMV(dp3_r1_p8, 1, 3, 8)
DEF_GEMV(dp1_r1_p8, 1, 1, 8)
DEF_GEMV(dp3_r1_p16, 1, 3, 16)
DEF_GEMV(dp1_r1_p16, 1, 1, 16)
/* r1y: row_seq's 32-byte loads */
DEF_GEMV_L(dp1_r1y_p0, 1, 1, 0, 1)

/* the even and odd halves fill the stack buffer as two bf16 terms would */
#define DEF_GEMV_EO(NAME, RB, PF)                                                                  \
    static void NAME(const void *w, size_t ldw, const float *x, size_t ldx, float *y, size_t ldy,  \
                     int n, int k, int r0, int r1) {                                               \
        gemv_eo(w, ldw, x, ldx, y, ldy, n, k, r0, r1, RB, PF);                                     \
    }
DEF_GEMV_EO(eo_r1y, 1, 0)
DEF_GEMV_EO(eo_r4_p2, 4, 2)
DEF_GEMV_EO(eo_r8_p1, 8, 1)

const cpu_gemv_bf16 cpu_gemv_bf16_avx512[] = {
    {"dp3-r8-pf1", 3, dp3_r8_p1}, {"dp3-r8-pf2", 3, dp3_r8_p2}, {"dp3-r8-pf0", 3, dp3_r8_p0},
    {"dp3-r4-pf2", 3, dp3_r4_p2}, {"dp1-r8-pf1", 1, dp1_r8_p1}, {"dp1-r8-pf2", 1, dp1_r8_p2},
    {"dp1-r8-pf0", 1, dp1_r8_p0}, {"dp1-r4-pf2", 1, dp1_r4_p2}, {"dp3-r1-pf0", 3, dp3_r1_p0},
    {"dp1-r1-pf0", 1, dp1_r1_p0}, {"dp3-r1-pf8", 3, dp3_r1_p8}, {"dp1-r1-pf8", 1, dp1_r1_p8},
    {"dp3-r1-pf16", 3, dp3_r1_p16}, {"dp1-r1-pf16", 1, dp1_r1_p16}, {"dp1-r1y-pf0", 1, dp1_r1y_p0},
    {"eo-r1y", 3, eo_r1y},       {"eo-r4-pf2", 3, eo_r4_p2},   {"eo-r8-pf1", 3, eo_r8_p1},
};
const int cpu_gemv_bf16_avx512_count =
    (int)(sizeof cpu_gemv_bf16_avx512 / sizeof cpu_gemv_bf16_avx512[0]);

int cpu_gemv_bf16_first(int terms) {
    int i = 0;
    while (i + 1 < cpu_gemv_bf16_avx512_count && cpu_gemv_bf16_avx512[i].terms != terms)
        i++;
    return i;
}
