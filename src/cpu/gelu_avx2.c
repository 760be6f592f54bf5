/* The exact GELU (gelu.h) on 8-float AVX2 + FMA vectors. */
#include <immintrin.h>
#include <string.h>

#include "cpu/gelu.h"

/* y where v < lim, else r */
#define BLEND_LT(v, lim, r, y) _mm256_blendv_ps(r, y, _mm256_cmp_ps(v, lim, _CMP_LT_OQ))

CPU_DEF_GELU(cpu_gelu_avx2, __m256, 8, _mm256_set1_ps, _mm256_loadu_ps, _mm256_storeu_ps,
             _mm256_fmadd_ps, _mm256_mul_ps, _mm256_div_ps, _mm256_min_ps, _mm256_max_ps, BLEND_LT)
