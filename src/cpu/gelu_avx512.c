/* The exact GELU (gelu.h) on 16-float AVX-512 vectors. */
#include <immintrin.h>
#include <string.h>

#include "cpu/gelu.h"

/* y where v < lim, else r */
#define BLEND_LT(v, lim, r, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lim, _CMP_LT_OQ), r, y)

CPU_DEF_GELU(cpu_gelu_avx512, __m512, 16, _mm512_set1_ps, _mm512_loadu_ps, _mm512_storeu_ps,
             _mm512_fmadd_ps, _mm512_mul_ps, _mm512_div_ps, _mm512_min_ps, _mm512_max_ps, BLEND_LT)
