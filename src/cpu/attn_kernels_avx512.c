/* AVX-512 attention kernels (F + BW + VL + F16C): P.V tiles of 4 query rows
 * x 4 value vectors (16 zmm accumulators; per key 4 loads and 4 broadcasts
 * feed 16 FMAs; ~150 GFLOP per CPU-second on contiguous rows, 3x8 and 4x6
 * measured ~125 and ~150), fp16 values widened in registers; the softmax with
 * a vectorised exp (Cody-Waite reduction, degree-7 polynomial, scalef; within
 * 2 ulp of expf) and the sum in double. */
#include <immintrin.h>
#include <math.h>

#include "base/half.h"
#include "cpu/attn_kernels.h"
#include "cpu/attn_kernels_driver.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __m512 pv_ldv_f32(const void *v, size_t i) {
    return _mm512_loadu_ps((const float *)v + i);
}
INLINE __m512 pv_ldv_f16(const void *v, size_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)v + i)));
}
INLINE float pv_ld1_f32(const void *v, size_t i) {
    return ((const float *)v)[i];
}
INLINE float pv_ld1_f16(const void *v, size_t i) {
    return nc_fp16_to_f32(((const uint16_t *)v)[i]);
}

#define FMA16(a, b, acc) _mm512_fmadd_ps(a, b, acc)
CPU_DEF_ATTN_PV(f32, __m512, 16, 4, 4, _mm512_loadu_ps, _mm512_set1_ps, FMA16, _mm512_storeu_ps)
CPU_DEF_ATTN_PV(f16, __m512, 16, 4, 4, _mm512_loadu_ps, _mm512_set1_ps, FMA16, _mm512_storeu_ps)

/* e^x for x <= 0: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts so n ln2
 * is exact), e^r by its Taylor series to r^7 (truncation < 1e-8 relative),
 * times 2^n by scalef. Below -87 (e^x < 2e-38, nothing next to the row's
 * largest term, which is 1) it returns e^-87 instead of a subnormal. */
INLINE __m512 exp_nonpositive(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

INLINE __mmask16 tail_mask(int left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

static void softmax_avx512(float *s, int n, int n_pad, float scale) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 16)
        mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, tail_mask(n - i), s + i));
    /* scale > 0 and rounding is monotonic: max(s * scale) = max(s) * scale */
    __m512 sv = _mm512_set1_ps(scale), mv = _mm512_set1_ps(_mm512_reduce_max_ps(mx) * scale);
    __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 x = _mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), sv), mv);
        __m512 e = _mm512_maskz_mov_ps(m, exp_nonpositive(x));
        _mm512_mask_storeu_ps(s + i, m, e);
        sum0 = _mm512_add_pd(sum0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        sum1 = _mm512_add_pd(sum1, _mm512_cvtps_pd(_mm256_castpd_ps(
                                       _mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    __m512 inv = _mm512_set1_ps((float)(1.0 / _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1))));
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(s + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), inv));
    }
    for (int i = n; i < n_pad; i += 16)
        _mm512_mask_storeu_ps(s + i, tail_mask(n_pad - i), _mm512_setzero_ps());
}

const cpu_attn_kernels cpu_attn_avx512 = {
    .softmax = softmax_avx512,
    .pv = {pv_f32, pv_f16},
};
