/* Quantized matmul with AVX-512 VNNI: vpdpbusd multiplies 64 unsigned by
 * 64 signed bytes and adds groups of four into 16 int32 lanes, so one zmm
 * holds two 32-weight blocks (lanes 0-7 the first, 8-15 the second) and
 * each pair of blocks costs dpbusd + convert + scale + FMA per tile entry.
 * dpbusd needs one unsigned operand: Q8 uses x + 128 (x xor 0x80) against
 * signed weights and starts the sum at -128 * sum(w) lane by lane; Q4 uses
 * its unsigned nibbles against signed x and starts at -8 * sum(x). */
#include <immintrin.h>
#include <string.h>

#include "cpu/qkernels.h"

#define INLINE static inline __attribute__((always_inline))

/* Two fp16 block scales as [d0 x8, d1 x8] (d1 = 0 for a lone tail block). */
INLINE __m512 scales2(const uint8_t *b0, const uint8_t *b1) {
    uint16_t h0, h1 = 0;
    memcpy(&h0, b0, 2);
    if (b1) memcpy(&h1, b1, 2);
    return _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16((short)h1), _mm_set1_epi16((short)h0)));
}

/* 2 blocks of activations (or 1, upper half zero) and their scales. */
INLINE __m512i load_x2(const int8_t *x, int two) {
    return two ? _mm512_loadu_si512((const void *)x)
               : _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)x));
}
INLINE __m512 load_s2(const float *s, int two) {
    return two ? _mm512_loadu_ps(s) : _mm512_zextps256_ps512(_mm256_loadu_ps(s));
}

INLINE __m512i load_q8_2(const uint8_t *b0, int two) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)(b0 + 2));
    return two ? _mm512_inserti64x4(
                     _mm512_castsi256_si512(lo),
                     _mm256_loadu_si256((const __m256i *)(b0 + CPU_Q8_BLOCK_BYTES + 2)), 1)
               : _mm512_zextsi256_si512(lo);
}

/* Q4 nibbles of two blocks as bytes 0..15 in block order: [lo0 hi0 lo1 hi1]. */
INLINE __m512i load_q4_2(const uint8_t *b0, int two) {
    __m128i p0 = _mm_loadu_si128((const __m128i *)(b0 + 2));
    __m128i p1 =
        two ? _mm_loadu_si128((const __m128i *)(b0 + CPU_Q4_BLOCK_BYTES + 2)) : _mm_setzero_si128();
    __m256i v = _mm256_set_m128i(p1, p0), m = _mm256_set1_epi8(15);
    __m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
    __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
}

INLINE void qtile_q8_avx512(const uint8_t *w, size_t ldw, const int8_t *xq, size_t ldq,
                            const float *xs, size_t lds, float *y, size_t ldy, int nb, int r, int t,
                            const int RB, const int TB) {
    __m512 acc[4][4];
    const __m512i k80 = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++)
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = _mm512_setzero_ps();
    for (int j = 0; j < nb; j += 2) {
        int two = j + 1 < nb;
        __m512i wv[4], corr[4];
        __m512 dw[4];
        _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {
            const uint8_t *b0 = w + (size_t)(r + a) * ldw + (size_t)j * CPU_Q8_BLOCK_BYTES;
            wv[a] = load_q8_2(b0, two);
            dw[a] = scales2(b0, two ? b0 + CPU_Q8_BLOCK_BYTES : NULL);
            corr[a] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k80, wv[a]));
        }
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {
            __m512i xu =
                _mm512_xor_si512(load_x2(xq + (size_t)(t + b) * ldq + (size_t)j * 32, two), k80);
            __m512 dx = load_s2(xs + (size_t)(t + b) * lds + (size_t)j * CPU_QSCALE_REP, two);
            _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {
                __m512i s = _mm512_dpbusd_epi32(corr[a], xu, wv[a]);
                acc[a][b] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[a], dx), acc[a][b]);
            }
        }
    }
    for (int a = 0; a < RB; a++)
        for (int b = 0; b < TB; b++)
            y[(size_t)(t + b) * ldy + (size_t)(r + a)] = _mm512_reduce_add_ps(acc[a][b]);
}

INLINE void qtile_q4_avx512(const uint8_t *w, size_t ldw, const int8_t *xq, size_t ldq,
                            const float *xs, size_t lds, float *y, size_t ldy, int nb, int r, int t,
                            const int RB, const int TB) {
    __m512 acc[4][4];
    const __m512i k8 = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++)
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = _mm512_setzero_ps();
    for (int j = 0; j < nb; j += 2) {
        int two = j + 1 < nb;
        __m512i wv[4];
        __m512 dw[4];
        _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {
            const uint8_t *b0 = w + (size_t)(r + a) * ldw + (size_t)j * CPU_Q4_BLOCK_BYTES;
            wv[a] = load_q4_2(b0, two);
            dw[a] = scales2(b0, two ? b0 + CPU_Q4_BLOCK_BYTES : NULL);
        }
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {
            __m512i xv = load_x2(xq + (size_t)(t + b) * ldq + (size_t)j * 32, two);
            __m512 dx = load_s2(xs + (size_t)(t + b) * lds + (size_t)j * CPU_QSCALE_REP, two);
            __m512i corr = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k8, xv));
            _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {
                __m512i s = _mm512_dpbusd_epi32(corr, wv[a], xv);
                acc[a][b] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[a], dx), acc[a][b]);
            }
        }
    }
    for (int a = 0; a < RB; a++)
        for (int b = 0; b < TB; b++)
            y[(size_t)(t + b) * ldy + (size_t)(r + a)] = _mm512_reduce_add_ps(acc[a][b]);
}

CPU_DEF_QMATMUL_LOOPS(q8_avx512, 4, 4, 4)
CPU_DEF_QMATMUL_LOOPS(q4_avx512, 4, 4, 4)
