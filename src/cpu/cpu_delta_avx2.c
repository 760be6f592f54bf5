/* y = beta*y + x B (cpu_delta.h) with AVX2+FMA: a row of y, up to 64
 * columns at a time, in eight ymm accumulators; columns past the last
 * multiple of 8 are done in scalar. */
#include <immintrin.h>

#include "cpu/cpu_delta.h"

void cpu_gemm_acc_avx2(int m, int n, int k, const float *x, size_t ldx, const float *B, size_t ldb,
                       float beta, float *y, size_t ldy) {
    int n8 = n / 8 * 8;
    for (int j0 = 0; j0 < n8; j0 += 64) {
        int nv = (n8 - j0 < 64 ? n8 - j0 : 64) / 8;
        for (int i = 0; i < m; i++) {
            float *yr = y + (size_t)i * ldy + j0;
            const float *xr = x + (size_t)i * ldx;
            __m256 acc[8];
            __m256 vb = _mm256_set1_ps(beta);
            for (int v = 0; v < nv; v++)
                acc[v] = beta == 0.0f ? _mm256_setzero_ps()
                                      : _mm256_mul_ps(vb, _mm256_loadu_ps(yr + 8 * v));
            for (int a = 0; a < k; a++) {
                __m256 s = _mm256_set1_ps(xr[a]);
                const float *br = B + (size_t)a * ldb + j0;
                for (int v = 0; v < nv; v++)
                    acc[v] = _mm256_fmadd_ps(s, _mm256_loadu_ps(br + 8 * v), acc[v]);
            }
            for (int v = 0; v < nv; v++)
                _mm256_storeu_ps(yr + 8 * v, acc[v]);
        }
    }
    if (n8 < n) cpu_gemm_acc_scalar(m, n - n8, k, x, ldx, B + n8, ldb, beta, y + n8, ldy);
}
