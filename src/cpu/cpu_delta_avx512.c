/* y = beta*y + x B (cpu_delta.h) with AVX-512: blocks of 4 rows x 64
 * columns of y in sixteen zmm accumulators, so each vector of B loaded
 * serves four rows (the products here stream B, a 64 KB state or a chunk
 * of values, from L2); a column tail is masked, leftover rows go one at a
 * time. */
#include <immintrin.h>

#include "cpu/cpu_delta.h"

/* rows i0..i0+R-1 (R <= 4) of y over the four vectors at column j0 */
/* always_inline: R becomes a constant at each call, acc stays in registers */
static inline __attribute__((always_inline)) void block(int R, int k, const float *x, size_t ldx,
                                                        const float *B, size_t ldb, float beta,
                                                        float *y, size_t ldy, const __mmask16 *mk) {
    __m512 acc[4][4];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < 4; v++)
            acc[r][v] =
                beta == 0.0f
                    ? _mm512_setzero_ps()
                    : _mm512_mul_ps(_mm512_set1_ps(beta),
                                    _mm512_maskz_loadu_ps(mk[v], y + (size_t)r * ldy + 16 * v));
    for (int a = 0; a < k; a++) {
        const float *br = B + (size_t)a * ldb;
        __m512 b0 = _mm512_maskz_loadu_ps(mk[0], br), b1 = _mm512_maskz_loadu_ps(mk[1], br + 16),
               b2 = _mm512_maskz_loadu_ps(mk[2], br + 32),
               b3 = _mm512_maskz_loadu_ps(mk[3], br + 48);
        for (int r = 0; r < R; r++) {
            __m512 s = _mm512_set1_ps(x[(size_t)r * ldx + a]);
            acc[r][0] = _mm512_fmadd_ps(s, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(s, b1, acc[r][1]);
            acc[r][2] = _mm512_fmadd_ps(s, b2, acc[r][2]);
            acc[r][3] = _mm512_fmadd_ps(s, b3, acc[r][3]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < 4; v++)
            if (mk[v]) _mm512_mask_storeu_ps(y + (size_t)r * ldy + 16 * v, mk[v], acc[r][v]);
}

void cpu_gemm_acc_avx512(int m, int n, int k, const float *x, size_t ldx, const float *B,
                         size_t ldb, float beta, float *y, size_t ldy) {
    for (int j0 = 0; j0 < n; j0 += 64) {
        __mmask16 mk[4];
        for (int v = 0; v < 4; v++) {
            int left = n - j0 - 16 * v;
            mk[v] = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
        }
        int i = 0;
        for (; i + 4 <= m; i += 4) /* constant R: the compiler keeps acc in registers */
            block(4, k, x + (size_t)i * ldx, ldx, B + j0, ldb, beta, y + (size_t)i * ldy + j0, ldy,
                  mk);
        for (; i < m; i++)
            block(1, k, x + (size_t)i * ldx, ldx, B + j0, ldb, beta, y + (size_t)i * ldy + j0, ldy,
                  mk);
    }
}
