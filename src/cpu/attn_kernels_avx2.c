/* AVX2 + FMA + F16C attention kernels: P.V tiles of 4 query rows x 3 value
 * vectors (12 of the 16 ymm registers accumulate, 3 hold the value vectors,
 * one the broadcast probability), fp16 values widened in registers; the
 * softmax with a vectorised exp (Cody-Waite reduction, degree-7 polynomial;
 * within 2 ulp of expf), scalar for the n % 8 tail, the sum in double.
 *
 * For one decoding row, streaming forms that read the cache from memory at
 * its rate: a q.k tile (up to 4 query rows x 2-4 keys) and the P.V tiles
 * over 2 KiB blocks of value rows, each asking for the cache lines 16 KiB
 * ahead into L2. Sixteen ymm registers cannot hold a 128-value row even for
 * one query row, so the tiles read rows in pieces (the P.V's 3-vector tiles
 * 96 bytes of each 512-byte row per pass). On Zen 4 the hardware
 * prefetchers do not follow that: one core's P.V over a head's 2000 fp32
 * values from memory read 10 GB/s, the fp32 matmul's q.k 19, a plain sum of
 * the same bytes 23; with the lines asked for ahead, P.V 24-25 and q.k
 * 20-27 (4 query rows to 2). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "cpu/attn_kernels.h"
#include "cpu/attn_kernels_driver.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __m256 pv_ldv_f32(const void *v, size_t i) {
    return _mm256_loadu_ps((const float *)v + i);
}
INLINE __m256 pv_ldv_f16(const void *v, size_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)v + i)));
}

#define FMA8(a, b, acc) _mm256_fmadd_ps(a, b, acc)
CPU_DEF_ATTN_PV(f32, f32, __m256, 8, 4, 3, _mm256_loadu_ps, _mm256_set1_ps, FMA8, _mm256_storeu_ps)
CPU_DEF_ATTN_PV(f16, f16, __m256, 8, 4, 3, _mm256_loadu_ps, _mm256_set1_ps, FMA8, _mm256_storeu_ps)

/* Eight elements of a key row from element i, widened to fp32 (the P.V's
 * value loads); one element (the P.V's scalar tail). */
INLINE __m256 key8(const char *k, size_t i, const int f16) {
    return f16 ? pv_ldv_f16(k, i) : pv_ldv_f32(k, i);
}
INLINE float key1(const char *k, size_t i, const int f16) {
    return f16 ? pv_ld1_f16(k, i) : pv_ld1_f32(k, i);
}

/* The sums of a, b, c, d's eight lanes: [sum a, sum b, sum c, sum d]. */
INLINE __m128 sum4(__m256 a, __m256 b, __m256 c, __m256 d) {
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* s[r * lds + c] = q row r . key row c for r < R, c < KB (constants after
 * inlining; R <= 4, KB <= 4, R * KB <= 8 so that the accumulators, the key
 * vectors and a query vector fit the 16 registers): 8-wide partial sums over
 * dim, the dim % 8 tail added one element at a time. */
INLINE void qk_tile(const float *q, size_t ldq, const char *k, size_t row_bytes, float *s,
                    size_t lds, int dim, const int R, const int KB, const int f16) {
    __m256 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++)
            acc[r][c] = _mm256_setzero_ps();
    int d = 0;
    for (; d + 8 <= dim; d += 8) {
        __m256 kv[4];
#pragma GCC unroll 4
        for (int c = 0; c < KB; c++)
            kv[c] = key8(k + (size_t)c * row_bytes, (size_t)d, f16);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 qv = _mm256_loadu_ps(q + (size_t)r * ldq + d);
            CPU_PV_IN_REGISTER(qv);
#pragma GCC unroll 4
            for (int c = 0; c < KB; c++)
                acc[r][c] = _mm256_fmadd_ps(qv, kv[c], acc[r][c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        float sums[4];
        _mm_storeu_ps(sums, sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
        for (int c = 0; c < KB; c++) {
            for (int e = d; e < dim; e++)
                sums[c] += q[(size_t)r * ldq + e] * key1(k + (size_t)c * row_bytes, (size_t)e, f16);
            s[(size_t)r * lds + c] = sums[c];
        }
    }
}

/* R query rows (a constant after inlining, <= 4) against all the keys, each
 * tile first asking for the lines CPU_STREAM_AHEAD bytes past its keys. */
INLINE void qk_rows(const float *q, size_t ldq, const void *k, size_t ldk, float *s, size_t lds,
                    int keys, int dim, const int R, const int f16) {
    const int KB = R <= 2 ? 4 : 2;
    size_t elt = f16 ? sizeof(nc_fp16) : sizeof(float), row_bytes = ldk * elt;
    size_t end = cpu_rows_end(keys, ldk, dim, elt);
    const char *kt = (const char *)k;
    int t = 0;
    for (; t + KB <= keys; t += KB) {
        cpu_prefetch_lines(kt, t * row_bytes + CPU_STREAM_AHEAD, KB * row_bytes, end);
        qk_tile(q, ldq, kt + t * row_bytes, row_bytes, s + t, lds, dim, R, KB, f16);
    }
    for (; t < keys; t++) /* fewer than KB keys left, past any prefetch */
        qk_tile(q, ldq, kt + t * row_bytes, row_bytes, s + t, lds, dim, R, 1, f16);
}

/* Rows in groups of four (each group reads the keys once), then the rest. */
INLINE void qk_stream(const float *q, size_t ldq, const void *k, size_t ldk, float *s, size_t lds,
                      int rows, int keys, int dim, const int f16) {
    int r = 0;
    for (; r + 4 <= rows; r += 4)
        qk_rows(q + (size_t)r * ldq, ldq, k, ldk, s + (size_t)r * lds, lds, keys, dim, 4, f16);
    q += (size_t)r * ldq;
    s += (size_t)r * lds;
    switch (rows - r) {
    case 0:
        break;
    case 1:
        qk_rows(q, ldq, k, ldk, s, lds, keys, dim, 1, f16);
        break;
    case 2:
        qk_rows(q, ldq, k, ldk, s, lds, keys, dim, 2, f16);
        break;
    default:
        qk_rows(q, ldq, k, ldk, s, lds, keys, dim, 3, f16);
        break;
    }
}

static void qk_stream_f32(const float *q, size_t ldq, const void *k, size_t ldk, float *s,
                          size_t lds, int rows, int keys, int dim) {
    qk_stream(q, ldq, k, ldk, s, lds, rows, keys, dim, 0);
}

static void qk_stream_f16(const float *q, size_t ldq, const void *k, size_t ldk, float *s,
                          size_t lds, int rows, int keys, int dim) {
    qk_stream(q, ldq, k, ldk, s, lds, rows, keys, dim, 1);
}

static void pv_stream_f32(const float *p, size_t ldp, const void *v, size_t ldv, float *o,
                          size_t ldo, int rows, int keys, int cols) {
    cpu_pv_blocks(pv_f32, sizeof(float), 0, p, ldp, v, ldv, o, ldo, rows, keys, cols);
}

static void pv_stream_f16(const float *p, size_t ldp, const void *v, size_t ldv, float *o,
                          size_t ldo, int rows, int keys, int cols) {
    cpu_pv_blocks(pv_f16, sizeof(nc_fp16), 0, p, ldp, v, ldv, o, ldo, rows, keys, cols);
}

static void softmax_avx2(float *s, int n, int n_pad, float scale) {
    int n8 = n / 8 * 8;
    __m256 mx8 = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < n8; i += 8)
        mx8 = _mm256_max_ps(mx8, _mm256_loadu_ps(s + i));
    float lanes[8], mx = -INFINITY;
    _mm256_storeu_ps(lanes, mx8);
    for (int i = 0; i < 8; i++)
        mx = lanes[i] > mx ? lanes[i] : mx;
    for (int i = n8; i < n; i++)
        mx = s[i] > mx ? s[i] : mx;
    mx *= scale; /* scale > 0 and rounding is monotonic: max(s * scale) = max(s) * scale */
    __m256 sv = _mm256_set1_ps(scale), mv = _mm256_set1_ps(mx);
    __m256d sum4 = _mm256_setzero_pd();
    for (int i = 0; i < n8; i += 8) {
        __m256 e =
            cpu_exp_nonpositive8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(s + i), sv), mv));
        _mm256_storeu_ps(s + i, e);
        sum4 = _mm256_add_pd(sum4, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        sum4 = _mm256_add_pd(sum4, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double part[4], sum;
    _mm256_storeu_pd(part, sum4);
    sum = part[0] + part[1] + part[2] + part[3];
    for (int i = n8; i < n; i++) {
        s[i] = expf(s[i] * scale - mx);
        sum += s[i];
    }
    float inv = (float)(1.0 / sum);
    __m256 inv8 = _mm256_set1_ps(inv);
    for (int i = 0; i < n8; i += 8)
        _mm256_storeu_ps(s + i, _mm256_mul_ps(_mm256_loadu_ps(s + i), inv8));
    for (int i = n8; i < n; i++)
        s[i] *= inv;
    for (int i = n; i < n_pad; i++)
        s[i] = 0.0f;
}

const cpu_attn_kernels cpu_attn_avx2 = {
    .softmax = softmax_avx2,
    .pv = {pv_f32, pv_f16},
    .qk_stream = {qk_stream_f32, qk_stream_f16},
    .pv_stream = {pv_stream_f32, pv_stream_f16},
};
