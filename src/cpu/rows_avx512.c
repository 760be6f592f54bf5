/* The row kernels (rows.h) on 16-float AVX-512 vectors. */
#include <immintrin.h>
#include <math.h>

#include "cpu/rows.h"

CPU_DEF_ROWS(cpu_rows_avx512, __m512, 16, _mm512_set1_ps, _mm512_loadu_ps, _mm512_storeu_ps,
             _mm512_add_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_reduce_add_ps)
