/* AVX-512 attention kernels (F + BW + VL + F16C): q.k tiles of 4 query rows
 * x 4 key rows summed together at the end (~130 GFLOP per CPU-second on
 * packed rows, the fp32 matmul's ~86); P.V tiles of 4 query rows x 4 value
 * vectors (16 zmm accumulators; per key 4 loads and 4 broadcasts feed 16
 * FMAs; ~150 GFLOP per CPU-second on contiguous rows, 3x8 and 4x6 measured
 * ~125 and ~150), fp16 values widened in registers; the softmax with a
 * vectorised exp (Cody-Waite reduction, degree-7 polynomial, scalef; within
 * 2 ulp of expf) and the sum in double. */
#include <immintrin.h>
#include <math.h>

#include "cpu/attn_kernels.h"
#include "cpu/attn_kernels_driver.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __m512 pv_ldv_f32(const void *v, size_t i) {
    return _mm512_loadu_ps((const float *)v + i);
}
INLINE __m512 pv_ldv_f16(const void *v, size_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)v + i)));
}

INLINE __mmask16 tail_mask(int left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

#define FMA16(a, b, acc) _mm512_fmadd_ps(a, b, acc)
CPU_DEF_ATTN_PV(f32, __m512, 16, 4, 4, _mm512_loadu_ps, _mm512_set1_ps, FMA16, _mm512_storeu_ps)
CPU_DEF_ATTN_PV(f16, __m512, 16, 4, 4, _mm512_loadu_ps, _mm512_set1_ps, FMA16, _mm512_storeu_ps)

/* The 16 sums of acc[r][c] (r, c < 4) in one vector, lane 4r + c: pairwise
 * adds of interleaved halves (unpack, shuffle, shuffle_f32x4), 15 adds and
 * 30 shuffles for 16 results, where a _mm512_reduce_add_ps per accumulator
 * spends 8 operations on each. */
INLINE __m512 sum_4x4(const __m512 acc[4][4]) {
    __m512 v[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        /* per 128-bit lane: [a0 0+2, a1 0+2, a0 1+3, a1 1+3] for pairs (0,1) and (2,3) */
        __m512 x = _mm512_add_ps(_mm512_unpacklo_ps(acc[r][0], acc[r][1]),
                                 _mm512_unpackhi_ps(acc[r][0], acc[r][1]));
        __m512 y = _mm512_add_ps(_mm512_unpacklo_ps(acc[r][2], acc[r][3]),
                                 _mm512_unpackhi_ps(acc[r][2], acc[r][3]));
        /* per 128-bit lane: the lane's part of the sums of c = 0, 1, 2, 3 */
        v[r] = _mm512_add_ps(_mm512_shuffle_ps(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
    }
    /* across the four 128-bit lanes: row r's sums into lane r */
    __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
    __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* One 16-wide step of qk_tile at element d, lanes outside m skipped (the
 * whole-vector steps pass a constant full mask: plain loads). */
INLINE void qk_step(const float *q, size_t ldq, const float *k, size_t ldk, int d, __mmask16 m,
                    __m512 acc[4][4], const int R, const int KB) {
    __m512 kv[4];
#pragma GCC unroll 4
    for (int c = 0; c < KB; c++)
        kv[c] = _mm512_maskz_loadu_ps(m, k + (size_t)c * ldk + d);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        __m512 qv = _mm512_maskz_loadu_ps(m, q + (size_t)r * ldq + d);
#pragma GCC unroll 4
        for (int c = 0; c < KB; c++)
            acc[r][c] = _mm512_fmadd_ps(qv, kv[c], acc[r][c]);
    }
}

/* s[r * lds + c] = q row r . k row c for r < R, c < KB (constants after
 * inlining): 16-wide partial sums in registers over dim, each key vector
 * feeding R FMAs and each query vector KB. */
INLINE void qk_tile(const float *q, size_t ldq, const float *k, size_t ldk, float *s, size_t lds,
                    int dim, const int R, const int KB) {
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < KB; c++)
            acc[r][c] = _mm512_setzero_ps();
    int d = 0;
    for (; d + 16 <= dim; d += 16)
        qk_step(q, ldq, k, ldk, d, (__mmask16)0xffff, acc, R, KB);
    if (d < dim) qk_step(q, ldq, k, ldk, d, tail_mask(dim - d), acc, R, KB);
    if (R == 4 && KB == 4) {
        __m512 sums = sum_4x4(acc);
        _mm_storeu_ps(s, _mm512_castps512_ps128(sums));
        _mm_storeu_ps(s + lds, _mm512_extractf32x4_ps(sums, 1));
        _mm_storeu_ps(s + 2 * lds, _mm512_extractf32x4_ps(sums, 2));
        _mm_storeu_ps(s + 3 * lds, _mm512_extractf32x4_ps(sums, 3));
    } else
        for (int r = 0; r < R; r++)
            for (int c = 0; c < KB; c++)
                s[(size_t)r * lds + c] = _mm512_reduce_add_ps(acc[r][c]);
}

/* R query rows (a constant after inlining) against all the keys. */
INLINE void qk_rows(const float *q, size_t ldq, const float *k, size_t ldk, float *s, size_t lds,
                    int keys, int dim, const int R) {
    int t = 0;
    for (; t + 4 <= keys; t += 4)
        qk_tile(q, ldq, k + (size_t)t * ldk, ldk, s + t, lds, dim, R, 4);
    for (; t < keys; t++)
        qk_tile(q, ldq, k + (size_t)t * ldk, ldk, s + t, lds, dim, R, 1);
}

static void qk_avx512(const float *q, size_t ldq, const float *k, size_t ldk, float *s, size_t lds,
                      int rows, int keys, int dim) {
    int r = 0;
    for (; r + 4 <= rows; r += 4)
        qk_rows(q + (size_t)r * ldq, ldq, k, ldk, s + (size_t)r * lds, lds, keys, dim, 4);
    for (; r < rows; r++)
        qk_rows(q + (size_t)r * ldq, ldq, k, ldk, s + (size_t)r * lds, lds, keys, dim, 1);
}

static void softmax_avx512(float *s, int n, int n_pad, float scale) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 16)
        mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, tail_mask(n - i), s + i));
    /* scale > 0 and rounding is monotonic: max(s * scale) = max(s) * scale */
    __m512 sv = _mm512_set1_ps(scale), mv = _mm512_set1_ps(_mm512_reduce_max_ps(mx) * scale);
    __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 x = _mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), sv), mv);
        __m512 e = _mm512_maskz_mov_ps(m, cpu_exp_nonpositive16(x));
        _mm512_mask_storeu_ps(s + i, m, e);
        sum0 = _mm512_add_pd(sum0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        sum1 = _mm512_add_pd(sum1, _mm512_cvtps_pd(_mm256_castpd_ps(
                                       _mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    __m512 inv = _mm512_set1_ps((float)(1.0 / _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1))));
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(s + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), inv));
    }
    for (int i = n; i < n_pad; i += 16)
        _mm512_mask_storeu_ps(s + i, tail_mask(n_pad - i), _mm512_setzero_ps());
}

const cpu_attn_kernels cpu_attn_avx512 = {
    .softmax = softmax_avx512,
    .qk = qk_avx512,
    .pv = {pv_f32, pv_f16},
};
