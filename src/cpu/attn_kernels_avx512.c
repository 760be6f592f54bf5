/* AVX-512 attention kernels (F + BW + VL + F16C): q.k tiles of 4 query rows
 * x 4 key rows summed together at the end (~130 GFLOP per CPU-second on
 * packed rows, the fp32 matmul's ~86); P.V tiles of 4 query rows x 4 value
 * vectors (16 zmm accumulators; per key 4 loads and 4 broadcasts feed 16
 * FMAs; ~150 GFLOP per CPU-second on contiguous rows, 3x8 and 4x6 measured
 * ~125 and ~150), fp16 values widened in registers; the softmax with a
 * vectorised exp (Cody-Waite reduction, degree-7 polynomial, scalef; within
 * 2 ulp of expf) and the sum in double. For one decoding row, streaming
 * forms that read the cache at the memory's rate: P.V tiles 8 vectors wide
 * (each 128-value row read whole, in order) and the q.k tile asking for the
 * keys' lines ahead. On Zen 4 the tiles' four interleaved rows held one
 * core's reads from memory to 10-12 GB/s; the streaming forms read 21-26,
 * as a plain sum of the same bytes does. */
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
CPU_DEF_ATTN_PV(f32, f32, __m512, 16, 4, 4, _mm512_loadu_ps, _mm512_set1_ps, FMA16,
                _mm512_storeu_ps)
CPU_DEF_ATTN_PV(f16, f16, __m512, 16, 4, 4, _mm512_loadu_ps, _mm512_set1_ps, FMA16,
                _mm512_storeu_ps)

/* The streaming P.V (pv_stream): tiles 8 vectors wide, so a 128-value row
 * (a head) is read whole, in order, once per tile of rows. From memory on
 * Zen 4, two rows' P.V read 25 GB/s on one core this way against 12 with
 * the 4-vector tiles, whose half rows leave a gap after every 256 bytes;
 * from L2 the two are alike. With 4 rows the 32 accumulators spill a
 * little, and still read 25. Wider rows (head_dim 256, Gemma 3) are read
 * in two halves all the same, so cpu_pv_blocks takes them in blocks with
 * the lines asked for ahead (rows of up to PV_WIDE_COLS values it passes
 * to the tiles whole): one core, two rows, 1000 keys of 256 fp32 values
 * from memory, 10.6-10.8 -> 23.2-24.0 GB/s, fp16 13 -> 25-27 (where for
 * 128-value rows the blocks cost a quarter: 27 -> 21). */
#define PV_WIDE_COLS (8 * 16)
CPU_DEF_ATTN_PV(f32_wide, f32, __m512, 16, 4, 8, _mm512_loadu_ps, _mm512_set1_ps, FMA16,
                _mm512_storeu_ps)
CPU_DEF_ATTN_PV(f16_wide, f16, __m512, 16, 4, 8, _mm512_loadu_ps, _mm512_set1_ps, FMA16,
                _mm512_storeu_ps)

static void pv_f32_stream(const float *p, size_t ldp, const void *v, size_t ldv, float *o,
                          size_t ldo, int rows, int keys, int cols) {
    cpu_pv_blocks(pv_f32_wide, sizeof(float), PV_WIDE_COLS, p, ldp, v, ldv, o, ldo, rows, keys,
                  cols);
}

static void pv_f16_stream(const float *p, size_t ldp, const void *v, size_t ldv, float *o,
                          size_t ldo, int rows, int keys, int cols) {
    cpu_pv_blocks(pv_f16_wide, sizeof(nc_fp16), PV_WIDE_COLS, p, ldp, v, ldv, o, ldo, rows, keys,
                  cols);
}

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

/* The streaming q.k (qk_stream, one decoding row's group heads against a
 * head's keys in memory) asks for the cache lines CPU_STREAM_AHEAD bytes
 * ahead of the keys in use, into L2. On Zen 4 one core's q.k over a head's
 * 2000 fp32 keys from memory read 10 GB/s with these tiles and no
 * prefetch (four rows' elements in turn: the hardware prefetchers do not
 * follow that), 12-22 with each row read whole in turn, 22-24 with these
 * tiles and 8-16 KiB ahead (L1 prefetches or shorter distances gave less);
 * on fp16 keys 14 -> 17-25 GB/s. The prompts' q.k reads keys copied to L1
 * and asks for none. */

/* Sixteen elements of a key row from element i, lanes outside m zero. */
INLINE __m512 key_vec(const void *k, size_t i, __mmask16 m, const int f16) {
    return f16 ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)k + i))
               : _mm512_maskz_loadu_ps(m, (const float *)k + i);
}

/* One 16-wide step of qk_tile at element d, lanes outside m skipped (the
 * whole-vector steps pass a constant full mask: plain loads): KB key
 * vectors, each feeding R FMAs, and R query vectors, each feeding KB. */
INLINE void qk_step(const float *q, size_t ldq, const char *k, size_t row_bytes, int d, __mmask16 m,
                    __m512 acc[4][4], const int R, const int KB, const int f16) {
    __m512 kv[4];
#pragma GCC unroll 4
    for (int c = 0; c < KB; c++)
        kv[c] = key_vec(k + (size_t)c * row_bytes, (size_t)d, m, f16);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        __m512 qv = _mm512_maskz_loadu_ps(m, q + (size_t)r * ldq + d);
#pragma GCC unroll 4
        for (int c = 0; c < KB; c++)
            acc[r][c] = _mm512_fmadd_ps(qv, kv[c], acc[r][c]);
    }
}

/* s[r * lds + c] = q row r . key row c for r < R, c < KB (constants after
 * inlining, <= 4): 16-wide partial sums in registers over dim, then all 16
 * summed together (sum_4x4, the rows and keys the tile lacks as zeros). */
INLINE void qk_tile(const float *q, size_t ldq, const char *k, size_t row_bytes, float *s,
                    size_t lds, int dim, const int R, const int KB, const int f16) {
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++)
            acc[r][c] = _mm512_setzero_ps();
    int d = 0;
    for (; d + 16 <= dim; d += 16)
        qk_step(q, ldq, k, row_bytes, d, (__mmask16)0xffff, acc, R, KB, f16);
    if (d < dim) qk_step(q, ldq, k, row_bytes, d, tail_mask(dim - d), acc, R, KB, f16);
    __m512 sums = sum_4x4(acc);
    __mmask8 km = (__mmask8)((1u << KB) - 1);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        __m128 row = r == 0   ? _mm512_castps512_ps128(sums)
                     : r == 1 ? _mm512_extractf32x4_ps(sums, 1)
                     : r == 2 ? _mm512_extractf32x4_ps(sums, 2)
                              : _mm512_extractf32x4_ps(sums, 3);
        _mm_mask_storeu_ps(s + (size_t)r * lds, km, row);
    }
}

/* R query rows (a constant after inlining, <= 4) against all the keys; with
 * ahead, each tile first asks for the lines that many bytes past its keys. */
INLINE void qk_rows(const float *q, size_t ldq, const void *k, size_t ldk, float *s, size_t lds,
                    int keys, int dim, const int R, const int f16, const size_t ahead) {
    size_t elt = f16 ? sizeof(nc_fp16) : sizeof(float), row_bytes = ldk * elt;
    size_t end = cpu_rows_end(keys, ldk, dim, elt);
    const char *kt = (const char *)k;
    int t = 0;
    for (; t + 4 <= keys; t += 4) {
        if (ahead) cpu_prefetch_lines(kt, t * row_bytes + ahead, 4 * row_bytes, end);
        qk_tile(q, ldq, kt + t * row_bytes, row_bytes, s + t, lds, dim, R, 4, f16);
    }
    for (; t < keys; t++) /* 1-3 keys left, past any prefetch */
        qk_tile(q, ldq, kt + t * row_bytes, row_bytes, s + t, lds, dim, R, 1, f16);
}

/* Rows in groups of four (each group reads the keys once), then the rest. */
INLINE void qk_all(const float *q, size_t ldq, const void *k, size_t ldk, float *s, size_t lds,
                   int rows, int keys, int dim, const int f16, const size_t ahead) {
    int r = 0;
    for (; r + 4 <= rows; r += 4)
        qk_rows(q + (size_t)r * ldq, ldq, k, ldk, s + (size_t)r * lds, lds, keys, dim, 4, f16,
                ahead);
    q += (size_t)r * ldq;
    s += (size_t)r * lds;
    switch (rows - r) {
    case 0:
        break;
    case 1:
        qk_rows(q, ldq, k, ldk, s, lds, keys, dim, 1, f16, ahead);
        break;
    case 2:
        qk_rows(q, ldq, k, ldk, s, lds, keys, dim, 2, f16, ahead);
        break;
    default:
        qk_rows(q, ldq, k, ldk, s, lds, keys, dim, 3, f16, ahead);
        break;
    }
}

static void qk_avx512(const float *q, size_t ldq, const float *k, size_t ldk, float *s, size_t lds,
                      int rows, int keys, int dim) {
    qk_all(q, ldq, k, ldk, s, lds, rows, keys, dim, 0, 0);
}

static void qk_stream_f32(const float *q, size_t ldq, const void *k, size_t ldk, float *s,
                          size_t lds, int rows, int keys, int dim) {
    qk_all(q, ldq, k, ldk, s, lds, rows, keys, dim, 0, CPU_STREAM_AHEAD);
}

static void qk_stream_f16(const float *q, size_t ldq, const void *k, size_t ldk, float *s,
                          size_t lds, int rows, int keys, int dim) {
    qk_all(q, ldq, k, ldk, s, lds, rows, keys, dim, 1, CPU_STREAM_AHEAD);
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
    .qk_stream = {qk_stream_f32, qk_stream_f16},
    .pv_stream = {pv_f32_stream, pv_f16_stream},
};
