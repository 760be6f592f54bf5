/* Quantized matmul with AVX2 (no VNNI): one 32-weight block per ymm.
 * vpmaddubsw needs an unsigned operand and saturates at 16 bits, so as in
 * llama.cpp the weights' signs move onto the activations (|w| times x with
 * w's sign: at most 2 * 127 * 127 < 2^15), then vpmaddwd sums pairs into
 * int32. Q4 nibbles are widened to signed (nibble - 8) first. */
#include <immintrin.h>
#include <string.h>

#include "cpu/q4_interleave.h"
#include "cpu/qkernels.h"

#define INLINE static inline __attribute__((always_inline))
#define QROW_CHUNK 512 /* blocks per chunk of prepared activations (x16) */

INLINE float scale_of(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return _cvtsh_ss(h);
}

INLINE __m256i load_q8(const uint8_t *blk) {
    return _mm256_loadu_si256((const __m256i *)(blk + 2));
}
INLINE __m256i load_q4(const uint8_t *blk) {
    __m128i p = _mm_loadu_si128((const __m128i *)(blk + 2)), m = _mm_set1_epi8(15);
    __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(p, 4), m), _mm_and_si128(p, m));
    return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
}

/* Per block: 8 int32 partial sums of w . x (w, x signed bytes in [-127, 127]
 * for Q8; w in [-8, 7] for Q4). */
INLINE __m256i dot32(__m256i w_abs, __m256i w, __m256i x) {
    __m256i p = _mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define DEF_QTILE(FMT, BLOCK_BYTES)                                                                \
    INLINE void qtile_##FMT##_avx2(const uint8_t *w, size_t ldw, const int8_t *xq, size_t ldq,     \
                                   const float *xs, size_t lds, float *y, size_t ldy, int nb,      \
                                   int r, int t, const int RB, const int TB) {                     \
        __m256 acc[4][4];                                                                          \
        _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++)                                       \
            _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = _mm256_setzero_ps();  \
        for (int j = 0; j < nb; j++) {                                                             \
            __m256i wv[4], wa[4];                                                                  \
            float dw[4];                                                                           \
            _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {                                 \
                const uint8_t *blk = w + (size_t)(r + a) * ldw + (size_t)j * BLOCK_BYTES;          \
                if (TB == 1) /* decoding: the next tile's rows (kernels_driver.h) */               \
                    __builtin_prefetch(blk + (size_t)RB * ldw);                                    \
                wv[a] = load_##FMT(blk);                                                           \
                wa[a] = _mm256_sign_epi8(wv[a], wv[a]);                                            \
                dw[a] = scale_of(blk);                                                             \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {                                 \
                __m256i xv = _mm256_loadu_si256(                                                   \
                    (const __m256i *)(xq + (size_t)(t + b) * ldq + (size_t)j * 32));               \
                __m256 dx =                                                                        \
                    _mm256_loadu_ps(xs + (size_t)(t + b) * lds + (size_t)j * CPU_QSCALE_REP);      \
                _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {                             \
                    __m256 s = _mm256_cvtepi32_ps(dot32(wa[a], wv[a], xv));                        \
                    acc[a][b] =                                                                    \
                        _mm256_fmadd_ps(s, _mm256_mul_ps(_mm256_set1_ps(dw[a]), dx), acc[a][b]);   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int a = 0; a < RB; a++)                                                               \
            for (int b = 0; b < TB; b++)                                                           \
                y[(size_t)(t + b) * ldy + (size_t)(r + a)] = hsum8(acc[a][b]);                     \
    }

DEF_QTILE(q8, CPU_Q8_BLOCK_BYTES)
DEF_QTILE(q4, CPU_Q4_BLOCK_BYTES)
CPU_DEF_QDECODE_FROM_QTILE(q8_avx2, 4)

/* ---- Q4 decoding: 4 rows x 2 blocks per step, reduced across rows -------
 * The per-row float work of qtile (scale load and convert, broadcast,
 * product, int32 convert, FMA, and the signs moved onto x) costs more than
 * the integer work. Here a ymm holds the 16 code bytes of two blocks (one
 * per 128-bit lane) and the nibbles stay unsigned (0..15, so vpmaddubsw
 * cannot saturate: 2 * 15 * 127 per pair, twice): lo against x[0..15] and
 * hi against x[16..31] of each block, added as int16, then summed into 4
 * int32 lanes per block. Two rounds of vphaddd turn 4 rows into [block j:
 * rows 0-3 | block j+1: rows 0-3], the offset -8 * sum(x) is subtracted
 * there once, and one gather fetches the 8 fp16 scales: one convert and
 * FMA per 4 rows and 2 blocks. */
INLINE __m256i q4_codes2(const uint8_t *b0, const int two) {
    __m128i c0 = _mm_loadu_si128((const __m128i *)(b0 + 2));
    return two ? _mm256_inserti128_si256(_mm256_castsi128_si256(c0),
                                         _mm_loadu_si128((const __m128i *)(b0 + 20)), 1)
               : _mm256_zextsi128_si256(c0);
}

/* x of blocks j, j+1 as [j: 0-15 | j+1: 0-15] (lo) and the 16-31 halves
 * (hi); block j+1 zero when two is 0. */
INLINE void x_halves2(const int8_t *xq, const int two, __m256i *lo, __m256i *hi) {
    __m256i xa = _mm256_loadu_si256((const __m256i *)xq);
    __m256i xb = two ? _mm256_loadu_si256((const __m256i *)(xq + 32)) : _mm256_setzero_si256();
    *lo = _mm256_permute2x128_si256(xa, xb, 0x20);
    *hi = _mm256_permute2x128_si256(xa, xb, 0x31);
}

/* Sum over pairs of 16-bit products, into 4 int32 lanes per block. */
INLINE __m256i nibble_dot(__m256i lo, __m256i hi, __m256i x_lo, __m256i x_hi) {
    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, x_lo), _mm256_maddubs_epi16(hi, x_hi));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

INLINE __m256 decode_pair_q4(const uint8_t *blk, size_t ldw, __m256i off, const int8_t *xq,
                             const float *xs, __m256 acc, const int two, int prefetch) {
    const __m256i nib = _mm256_set1_epi8(15);
    __m256i x_lo, x_hi, s[4];
    x_halves2(xq, two, &x_lo, &x_hi);
    _Pragma("GCC unroll 4") for (int a = 0; a < 4; a++) {
        const uint8_t *b0 = blk + (size_t)a * ldw;
        if (prefetch) _mm_prefetch((const char *)b0 + 8 * ldw, _MM_HINT_T1); /* 2 tiles ahead */
        __m256i c = q4_codes2(b0, two);
        s[a] = nibble_dot(_mm256_and_si256(c, nib), _mm256_and_si256(_mm256_srli_epi16(c, 4), nib),
                          x_lo, x_hi);
    }
    __m256i tot = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    __m256i xsum = nibble_dot(_mm256_set1_epi8(8), _mm256_set1_epi8(8), x_lo, x_hi);
    xsum = _mm256_hadd_epi32(xsum, xsum);
    tot = _mm256_sub_epi32(tot, _mm256_hadd_epi32(xsum, xsum));
    /* the 8 scales (low words of the gathered dwords); block j+1's lanes
     * are not read when two is 0 */
    const __m256i lanes4 = _mm256_setr_epi32(-1, -1, -1, -1, 0, 0, 0, 0);
    __m256i g =
        two ? _mm256_i32gather_epi32((const int *)blk, off, 1)
            : _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)blk, off, lanes4, 1);
    const __m256i low_words =
        _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9,
                         12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    g = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(g, low_words), _MM_SHUFFLE(3, 1, 2, 0));
    __m256 dw = _mm256_cvtph_ps(_mm256_castsi256_si128(g));
    /* xs holds each block scale 8 times: from the 5th copy of block j on,
     * 4 of j then 4 of j + 1 */
    __m256 dx = two ? _mm256_loadu_ps(xs + 4) : _mm256_maskload_ps(xs + 4, lanes4);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot), _mm256_mul_ps(dw, dx), acc);
}

INLINE void qdecode_q4_avx2(const uint8_t *w, size_t ldw, const int8_t *xq, const float *xs,
                            float *y, int nb, int r, int r0, int r1) {
    (void)r0;
    int prefetch = r + 12 <= r1; /* not past the caller's rows */
    const uint8_t *row = w + (size_t)r * ldw;
    int l = (int)ldw;
    __m256i off = _mm256_setr_epi32(0, l, 2 * l, 3 * l, 18, 18 + l, 18 + 2 * l, 18 + 3 * l);
    __m256 acc = _mm256_setzero_ps();
    int j = 0;
    for (; j + 2 <= nb; j += 2)
        acc = decode_pair_q4(row + (size_t)j * CPU_Q4_BLOCK_BYTES, ldw, off, xq + (size_t)j * 32,
                             xs + (size_t)j * CPU_QSCALE_REP, acc, 1, prefetch);
    if (j < nb)
        acc = decode_pair_q4(row + (size_t)j * CPU_Q4_BLOCK_BYTES, ldw, off, xq + (size_t)j * 32,
                             xs + (size_t)j * CPU_QSCALE_REP, acc, 0, prefetch);
    _mm_storeu_ps(y + r, _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)));
}

CPU_DEF_QMATMUL_LOOPS(q8_avx2, 4, 2, 4)
CPU_DEF_QMATMUL_LOOPS(q4_avx2, 4, 2, 4)

/* ---- decoding Q4 interleaved by 16 rows (q4_interleave.h) ----------------
 * The AVX-512 kernel's layout at half the width: a 32-byte load of a 64-byte
 * code chunk is 8 rows x 4 codes, so a group is two halves of 8 rows, each
 * row a 32-bit lane: no sums across lanes and no permutes. Without
 * vpdpbusd, vpmaddubsw multiplies the unsigned nibbles (0..15) by the
 * activation bytes broadcast, and the block's 8 products per half (4 chunks,
 * low and high nibbles) add up in int16: each is at most 2 * 15 * 128 in
 * magnitude, the 8 at most 30720 < 2^15. One vpmaddwd per half and block
 * then gives the rows' int32 sums, which start from the block's correction
 * -8 * sum(x). */
INLINE __m256i x_bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* One block's sums for the 16 rows, rows 0-7 into s[0] (codes at c,
 * activations at x): both halves of a chunk against the same 4 activation
 * bytes broadcast, so 2 broadcasts per chunk stay in registers. */
INLINE void x16_block(const uint8_t *c, const int8_t *x, int32_t ncorr, __m256i s[2]) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    __m256i p[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {
        __m256i xl = x_bcast4(x + 4 * q), xh = x_bcast4(x + 16 + 4 * q);
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(c + q * 64 + h * 32));
            p[h] = _mm256_add_epi16(p[h], _mm256_maddubs_epi16(_mm256_and_si256(v, nibble), xl));
            p[h] = _mm256_add_epi16(
                p[h], _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), xh));
        }
    }
    for (int h = 0; h < 2; h++)
        s[h] = _mm256_add_epi32(_mm256_madd_epi16(p[h], _mm256_set1_epi16(1)),
                                _mm256_set1_epi32(ncorr));
}

/* Blocks 0..nbc-1 (nbc even) of one group (e at its first pair) against
 * one activation row: the 16 rows' sums into y (added to y when
 * accumulate). */
INLINE void x16_group_to(const uint8_t *e, const int8_t *xq, const float *xs, const int32_t *ncorr,
                         int nbc, float *y, int accumulate) {
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int j = 0; j < nbc; j++) {
        const uint8_t *pair = e + (size_t)(j / 2) * CPU_Q4X16_PAIR_BYTES;
        __m256 dx = _mm256_set1_ps(xs[(size_t)j * CPU_QSCALE_REP]);
        __m256i s[2];
        x16_block(pair + 64 + (j % 2) * 256, xq + (size_t)j * 32, ncorr[j], s);
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            __m256 dw =
                _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(pair + (j % 2) * 32 + h * 16)));
            acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[h]), _mm256_mul_ps(dw, dx), acc[h]);
        }
    }
    for (int h = 0; h < 2; h++)
        _mm256_storeu_ps(y + 8 * h,
                         accumulate ? _mm256_add_ps(acc[h], _mm256_loadu_ps(y + 8 * h)) : acc[h]);
}

CPU_DEF_Q4X16_LOOPS(avx2, QROW_CHUNK)
