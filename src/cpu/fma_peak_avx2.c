/* The AVX2 + FMA burner for cpu_peak.h: 12 independent ymm chains. */
#include <immintrin.h>

#include "cpu/cpu_peak.h"

double cpu_fma_burn_avx2(long iters, float *sink) {
    __m256 a[12], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int j = 0; j < 12; j++)
        a[j] = _mm256_set1_ps(*sink + (float)j);
    for (long i = 0; i < iters; i++) {
        _Pragma("GCC unroll 12") for (int j = 0; j < 12; j++) a[j] = _mm256_fmadd_ps(a[j], m, c);
    }
    __m256 s = a[0];
    for (int j = 1; j < 12; j++)
        s = _mm256_add_ps(s, a[j]);
    float v[8];
    _mm256_storeu_ps(v, s);
    *sink = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    return 12.0 * 8 * 2 * (double)iters;
}
