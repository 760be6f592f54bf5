/* AVX2 + FMA + F16C attention kernels: P.V tiles of 4 query rows x 3 value
 * vectors (12 of the 16 ymm registers accumulate, 3 hold the value vectors,
 * one the broadcast probability), fp16 values widened in registers; the
 * softmax with a vectorised exp (Cody-Waite reduction, degree-7 polynomial;
 * within 2 ulp of expf), scalar for the n % 8 tail, the sum in double. */
#include <immintrin.h>
#include <math.h>

#include "cpu/attn_kernels.h"
#include "cpu/attn_kernels_driver.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __m256 pv_ldv_f32(const void *v, size_t i) {
    return _mm256_loadu_ps((const float *)v + i);
}
INLINE __m256 pv_ldv_f16(const void *v, size_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)v + i)));
}

#define FMA8(a, b, acc) _mm256_fmadd_ps(a, b, acc)
CPU_DEF_ATTN_PV(f32, __m256, 8, 4, 3, _mm256_loadu_ps, _mm256_set1_ps, FMA8, _mm256_storeu_ps)
CPU_DEF_ATTN_PV(f16, __m256, 8, 4, 3, _mm256_loadu_ps, _mm256_set1_ps, FMA8, _mm256_storeu_ps)

static void softmax_avx2(float *s, int n, int n_pad, float scale) {
    int n8 = n / 8 * 8;
    __m256 mx8 = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < n8; i += 8)
        mx8 = _mm256_max_ps(mx8, _mm256_loadu_ps(s + i));
    float lanes[8], mx = -INFINITY;
    _mm256_storeu_ps(lanes, mx8);
    for (int i = 0; i < 8; i++)
        mx = lanes[i] > mx ? lanes[i] : mx;
    for (int i = n8; i < n; i++)
        mx = s[i] > mx ? s[i] : mx;
    mx *= scale; /* scale > 0 and rounding is monotonic: max(s * scale) = max(s) * scale */
    __m256 sv = _mm256_set1_ps(scale), mv = _mm256_set1_ps(mx);
    __m256d sum4 = _mm256_setzero_pd();
    for (int i = 0; i < n8; i += 8) {
        __m256 e = cpu_exp_nonpositive8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(s + i), sv), mv));
        _mm256_storeu_ps(s + i, e);
        sum4 = _mm256_add_pd(sum4, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        sum4 = _mm256_add_pd(sum4, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double part[4], sum;
    _mm256_storeu_pd(part, sum4);
    sum = part[0] + part[1] + part[2] + part[3];
    for (int i = n8; i < n; i++) {
        s[i] = expf(s[i] * scale - mx);
        sum += s[i];
    }
    float inv = (float)(1.0 / sum);
    __m256 inv8 = _mm256_set1_ps(inv);
    for (int i = 0; i < n8; i += 8)
        _mm256_storeu_ps(s + i, _mm256_mul_ps(_mm256_loadu_ps(s + i), inv8));
    for (int i = n8; i < n; i++)
        s[i] *= inv;
    for (int i = n; i < n_pad; i++)
        s[i] = 0.0f;
}

const cpu_attn_kernels cpu_attn_avx2 = {
    .softmax = softmax_avx2,
    .pv = {pv_f32, pv_f16},
};
