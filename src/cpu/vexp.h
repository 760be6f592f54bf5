/* e^x for x <= 0 on each instruction set's vectors, for the kernel files
 * that need it (the attention softmax, the sigmoid gates of rows.h): x =
 * n ln2 + r with |r| <= ln2/2 (ln2 in two parts, the first with few bits,
 * so n * LN2_HI is exact), e^r by its Taylor series to r^7 (truncation
 * < 1e-8 relative), times 2^n. Below CPU_EXP_MIN_X (e^x < 2e-38, nothing
 * next to a softmax row's largest term, which is 1, or next to 1 in a
 * sigmoid) the result is e^CPU_EXP_MIN_X instead of a subnormal. Within 2
 * ulp of expf. Each function exists where its file's target flags allow. */
#ifndef NC_CPU_VEXP_H
#define NC_CPU_VEXP_H

#define CPU_EXP_MIN_X (-87.0f)
#define CPU_EXP_LOG2E 1.44269504088896341f
#define CPU_EXP_LN2_HI 0.693359375f
#define CPU_EXP_LN2_LO (-2.12194440e-4f)
/* e^r by Horner's rule; FMA(a, b, c) = a * b + c, SET1(f) a vector of f. */
#define CPU_EXP_TAYLOR7(r, FMA, SET1)                                                              \
    FMA(FMA(FMA(FMA(FMA(FMA(FMA(SET1(1.0f / 5040), r, SET1(1.0f / 720)), r, SET1(1.0f / 120)), r,  \
                        SET1(1.0f / 24)),                                                          \
                    r, SET1(1.0f / 6)),                                                            \
                r, SET1(0.5f)),                                                                    \
            r, SET1(1.0f)),                                                                        \
        r, SET1(1.0f))

#if defined(__AVX512F__)
#include <immintrin.h>
/* 2^n applied by scalef */
static inline __attribute__((always_inline)) __m512 cpu_exp_nonpositive16(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(CPU_EXP_MIN_X));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(CPU_EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CPU_EXP_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CPU_EXP_LN2_LO), r);
    return _mm512_scalef_ps(CPU_EXP_TAYLOR7(r, _mm512_fmadd_ps, _mm512_set1_ps), n);
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
/* 2^n built in the exponent field (n >= -126 after the clamp, so it is a
 * normal number) */
static inline __attribute__((always_inline)) __m256 cpu_exp_nonpositive8(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(CPU_EXP_MIN_X));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(CPU_EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CPU_EXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CPU_EXP_LN2_LO), r);
    __m256i e2n =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(CPU_EXP_TAYLOR7(r, _mm256_fmadd_ps, _mm256_set1_ps),
                         _mm256_castsi256_ps(e2n));
}
#endif

#if defined(__aarch64__)
#include <arm_neon.h>
#define CPU_VEXP_FMA4(a, b, c) vfmaq_f32(c, a, b) /* a * b + c */
/* 2^n built in the exponent field, as for AVX2 */
static inline __attribute__((always_inline)) float32x4_t cpu_exp_nonpositive4(float32x4_t x) {
    x = vmaxq_f32(x, vdupq_n_f32(CPU_EXP_MIN_X));
    float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(CPU_EXP_LOG2E)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(CPU_EXP_LN2_HI));
    r = vfmsq_f32(r, n, vdupq_n_f32(CPU_EXP_LN2_LO));
    int32x4_t e2n = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(CPU_EXP_TAYLOR7(r, CPU_VEXP_FMA4, vdupq_n_f32), vreinterpretq_f32_s32(e2n));
}
#endif

#endif
