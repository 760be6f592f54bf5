/* The row kernels (rows.h) on 16-float AVX-512 vectors. */
#include <immintrin.h>
#include <math.h>

#include "cpu/rows.h"
#include "cpu/vexp.h"

#define BLEND_LT(v, lim, r, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lim, _CMP_LT_OQ), r, y)

CPU_DEF_ROWS(cpu_rows_avx512, __m512, 16, _mm512_set1_ps, _mm512_loadu_ps, _mm512_storeu_ps,
             _mm512_add_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_div_ps, _mm512_min_ps,
             _mm512_fmadd_ps, _mm512_reduce_add_ps, cpu_exp_nonpositive16, BLEND_LT)
