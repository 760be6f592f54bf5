/* The AVX-512 FMA burner for cpu_peak.h: 12 independent zmm chains. */
#include <immintrin.h>

#include "cpu/cpu_peak.h"

double cpu_fma_burn_avx512(long iters, float *sink) {
    __m512 a[12], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int j = 0; j < 12; j++)
        a[j] = _mm512_set1_ps(*sink + (float)j);
    for (long i = 0; i < iters; i++) {
        _Pragma("GCC unroll 12") for (int j = 0; j < 12; j++) a[j] = _mm512_fmadd_ps(a[j], m, c);
    }
    __m512 s = a[0];
    for (int j = 1; j < 12; j++)
        s = _mm512_add_ps(s, a[j]);
    *sink = _mm512_reduce_add_ps(s);
    return 12.0 * 16 * 2 * (double)iters;
}
