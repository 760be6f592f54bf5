/* Quantized matmul with AVX2 (no VNNI): one 32-weight block per ymm.
 * vpmaddubsw needs an unsigned operand and saturates at 16 bits, so as in
 * llama.cpp the weights' signs move onto the activations (|w| times x with
 * w's sign: at most 2 * 127 * 127 < 2^15), then vpmaddwd sums pairs into
 * int32. Q4 nibbles are widened to signed (nibble - 8) first. */
#include <immintrin.h>
#include <string.h>

#include "cpu/qkernels.h"

#define INLINE static inline __attribute__((always_inline))

INLINE float scale_of(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return _cvtsh_ss(h);
}

INLINE __m256i load_q8(const uint8_t *blk) {
    return _mm256_loadu_si256((const __m256i *)(blk + 2));
}
INLINE __m256i load_q4(const uint8_t *blk) {
    __m128i p = _mm_loadu_si128((const __m128i *)(blk + 2)), m = _mm_set1_epi8(15);
    __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(p, 4), m), _mm_and_si128(p, m));
    return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
}

/* Per block: 8 int32 partial sums of w . x (w, x signed bytes in [-127, 127]
 * for Q8; w in [-8, 7] for Q4). */
INLINE __m256i dot32(__m256i w_abs, __m256i w, __m256i x) {
    __m256i p = _mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define DEF_QTILE(FMT, BLOCK_BYTES)                                                                \
    INLINE void qtile_##FMT##_avx2(const uint8_t *w, size_t ldw, const int8_t *xq, size_t ldq,     \
                                   const float *xs, size_t lds, float *y, size_t ldy, int nb,      \
                                   int r, int t, const int RB, const int TB) {                     \
        __m256 acc[4][4];                                                                          \
        _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++)                                       \
            _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = _mm256_setzero_ps();  \
        for (int j = 0; j < nb; j++) {                                                             \
            __m256i wv[4], wa[4];                                                                  \
            float dw[4];                                                                           \
            _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {                                 \
                const uint8_t *blk = w + (size_t)(r + a) * ldw + (size_t)j * BLOCK_BYTES;          \
                if (TB == 1) /* decoding: the next tile's rows (kernels_driver.h) */               \
                    __builtin_prefetch(blk + (size_t)RB * ldw);                                    \
                wv[a] = load_##FMT(blk);                                                           \
                wa[a] = _mm256_sign_epi8(wv[a], wv[a]);                                            \
                dw[a] = scale_of(blk);                                                             \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {                                 \
                __m256i xv = _mm256_loadu_si256(                                                   \
                    (const __m256i *)(xq + (size_t)(t + b) * ldq + (size_t)j * 32));               \
                __m256 dx =                                                                        \
                    _mm256_loadu_ps(xs + (size_t)(t + b) * lds + (size_t)j * CPU_QSCALE_REP);      \
                _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {                             \
                    __m256 s = _mm256_cvtepi32_ps(dot32(wa[a], wv[a], xv));                        \
                    acc[a][b] =                                                                    \
                        _mm256_fmadd_ps(s, _mm256_mul_ps(_mm256_set1_ps(dw[a]), dx), acc[a][b]);   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int a = 0; a < RB; a++)                                                               \
            for (int b = 0; b < TB; b++)                                                           \
                y[(size_t)(t + b) * ldy + (size_t)(r + a)] = hsum8(acc[a][b]);                     \
    }

DEF_QTILE(q8, CPU_Q8_BLOCK_BYTES)
DEF_QTILE(q4, CPU_Q4_BLOCK_BYTES)
CPU_DEF_QDECODE_FROM_QTILE(q8_avx2, 4)
CPU_DEF_QDECODE_FROM_QTILE(q4_avx2, 4)
CPU_DEF_QMATMUL_LOOPS(q8_avx2, 4, 2, 4)
CPU_DEF_QMATMUL_LOOPS(q4_avx2, 4, 2, 4)
