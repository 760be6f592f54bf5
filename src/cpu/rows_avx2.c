/* The row kernels (rows.h) on 8-float AVX2 vectors. */
#include <immintrin.h>
#include <math.h>

#include "cpu/rows.h"
#include "cpu/vexp.h"

static inline float reduce8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define BLEND_LT(v, lim, r, y) _mm256_blendv_ps(r, y, _mm256_cmp_ps(v, lim, _CMP_LT_OQ))

CPU_DEF_ROWS(cpu_rows_avx2, __m256, 8, _mm256_set1_ps, _mm256_loadu_ps, _mm256_storeu_ps,
             _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_div_ps, _mm256_min_ps,
             _mm256_fmadd_ps, reduce8, cpu_exp_nonpositive8, BLEND_LT)
