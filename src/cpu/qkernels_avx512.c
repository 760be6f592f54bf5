/* Quantized matmul with AVX-512 VNNI: vpdpbusd multiplies 64 unsigned by
 * 64 signed bytes and adds groups of four into 16 int32 lanes, so one zmm
 * holds two 32-weight blocks (lanes 0-7 the first, 8-15 the second) and
 * each pair of blocks costs dpbusd + convert + scale + FMA per tile entry.
 * dpbusd needs one unsigned operand: Q8 uses x + 128 (x xor 0x80) against
 * signed weights and starts the sum at -128 * sum(w) lane by lane; Q4 uses
 * its unsigned nibbles against signed x and starts at -8 * sum(x).
 * Decoding (one activation row) has its own 8-row kernels further down,
 * which reduce integer sums across rows before any float work, and one
 * for Q4 rows interleaved by 16 at load (q4_interleave.h); prompts use
 * qtile or the repacked panels at the end. */
#include <immintrin.h>
#include <string.h>

#include "cpu/qgemv.h"
#include "cpu/q4_interleave.h"
#include "cpu/qkernels.h"
#include "cpu/store16_avx512.h"
#include "cpu/transpose_avx512.h"

#define INLINE static inline __attribute__((always_inline))

/* Two fp16 block scales as [d0 x8, d1 x8] (d1 = 0 for a lone tail block). */
INLINE __m512 scales2(const uint8_t *b0, const uint8_t *b1) {
    /* two broadcasts straight from memory and one blend (no trip through
     * general registers) */
    __m256i d0 = _mm256_broadcastw_epi16(_mm_loadu_si16(b0));
    __m256i d1 = b1 ? _mm256_broadcastw_epi16(_mm_loadu_si16(b1)) : _mm256_setzero_si256();
    return _mm512_cvtph_ps(_mm256_mask_blend_epi16((__mmask16)0xff00, d0, d1));
}

/* 2 blocks of activations (or 1, upper half zero) and their scales. */
INLINE __m512i load_x2(const int8_t *x, int two) {
    return two ? _mm512_loadu_si512((const void *)x)
               : _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)x));
}
INLINE __m512 load_s2(const float *s, int two) {
    return two ? _mm512_loadu_ps(s) : _mm512_zextps256_ps512(_mm256_loadu_ps(s));
}

INLINE __m512i load_q8_2(const uint8_t *b0, int two) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)(b0 + 2));
    return two ? _mm512_inserti64x4(
                     _mm512_castsi256_si512(lo),
                     _mm256_loadu_si256((const __m256i *)(b0 + CPU_Q8_BLOCK_BYTES + 2)), 1)
               : _mm512_zextsi256_si512(lo);
}

/* Q4 nibbles of two blocks as bytes 0..15 in block order: [lo0 hi0 lo1 hi1].
 * Each block's 16 bytes are broadcast to two 128-bit lanes straight from
 * memory (pure loads), the two halves joined, and one variable shift (0 or
 * 4 bits per 64-bit lane) and one mask pick the nibbles: 3 vector ops. */
INLINE __m512i load_q4_2(const uint8_t *b0, int two) {
    __m256i p0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b0 + 2)));
    __m256i p1 = two ? _mm256_broadcastsi128_si256(
                           _mm_loadu_si128((const __m128i *)(b0 + CPU_Q4_BLOCK_BYTES + 2)))
                     : _mm256_setzero_si256();
    __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(p0), p1, 1);
    return _mm512_and_si512(_mm512_srlv_epi64(z, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)),
                            _mm512_set1_epi8(15));
}

INLINE void qtile_q8_avx512(const uint8_t *w, size_t ldw, const int8_t *xq, size_t ldq,
                            const float *xs, size_t lds, float *y, size_t ldy, int nb, int r, int t,
                            const int RB, const int TB) {
    __m512 acc[8][4];
    const __m512i k80 = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++)
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = _mm512_setzero_ps();
    for (int j = 0; j < nb; j += 2) {
        int two = j + 1 < nb;
        __m512i wv[8], corr[8];
        __m512 dw[8];
        _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) {
            const uint8_t *b0 = w + (size_t)(r + a) * ldw + (size_t)j * CPU_Q8_BLOCK_BYTES;
            if (TB == 1) /* decoding: the next tile's rows (kernels_driver.h) */
                _mm_prefetch((const char *)b0 + (size_t)RB * ldw, _MM_HINT_T1);
            wv[a] = load_q8_2(b0, two);
            dw[a] = scales2(b0, two ? b0 + CPU_Q8_BLOCK_BYTES : NULL);
            corr[a] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k80, wv[a]));
        }
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {
            __m512i xu =
                _mm512_xor_si512(load_x2(xq + (size_t)(t + b) * ldq + (size_t)j * 32, two), k80);
            __m512 dx = load_s2(xs + (size_t)(t + b) * lds + (size_t)j * CPU_QSCALE_REP, two);
            _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) {
                __m512i s = _mm512_dpbusd_epi32(corr[a], xu, wv[a]);
                acc[a][b] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[a], dx), acc[a][b]);
            }
        }
    }
    for (int a = 0; a < RB; a++)
        for (int b = 0; b < TB; b++)
            y[(size_t)(t + b) * ldy + (size_t)(r + a)] = _mm512_reduce_add_ps(acc[a][b]);
}

INLINE void qtile_q4_avx512(const uint8_t *w, size_t ldw, const int8_t *xq, size_t ldq,
                            const float *xs, size_t lds, float *y, size_t ldy, int nb, int r, int t,
                            const int RB, const int TB) {
    __m512 acc[8][4];
    const __m512i k8 = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
    _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++)
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = _mm512_setzero_ps();
    for (int j = 0; j < nb; j += 2) {
        int two = j + 1 < nb;
        __m512i wv[8];
        __m512 dw[8];
        _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) {
            const uint8_t *b0 = w + (size_t)(r + a) * ldw + (size_t)j * CPU_Q4_BLOCK_BYTES;
            if (TB == 1) /* decoding: the next tile's rows (kernels_driver.h) */
                _mm_prefetch((const char *)b0 + (size_t)RB * ldw, _MM_HINT_T1);
            wv[a] = load_q4_2(b0, two);
            dw[a] = scales2(b0, two ? b0 + CPU_Q4_BLOCK_BYTES : NULL);
        }
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {
            __m512i xv = load_x2(xq + (size_t)(t + b) * ldq + (size_t)j * 32, two);
            __m512 dx = load_s2(xs + (size_t)(t + b) * lds + (size_t)j * CPU_QSCALE_REP, two);
            __m512i corr = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k8, xv));
            _Pragma("GCC unroll 8") for (int a = 0; a < RB; a++) {
                __m512i s = _mm512_dpbusd_epi32(corr, wv[a], xv);
                acc[a][b] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[a], dx), acc[a][b]);
            }
        }
    }
    for (int a = 0; a < RB; a++)
        for (int b = 0; b < TB; b++)
            y[(size_t)(t + b) * ldy + (size_t)(r + a)] = _mm512_reduce_add_ps(acc[a][b]);
}

/* ---- decoding: 8 rows at a time, reduced across rows -------------------
 * With one activation row the per-row float work of qtile (two scale
 * broadcasts, blend, fp16 convert, int32 convert, scale product, FMA: 8 of
 * its 12 vector uops per row and pair of blocks) costs more than the integer
 * work. Here each pair of blocks first reduces the 8 rows' int32 sums to one
 * vector (a transpose-and-add tree, 21 uops for 8 rows), and one gather
 * fetches the 16 fp16 scales of those 8 rows x 2 blocks, so the float work
 * is one convert and FMA per 8 rows. Activations are the signed operand of
 * vpdpbusd and the weights the unsigned one for both formats (Q8 as w + 128,
 * Q4 as its nibbles), so the correction -k * sum(x) is per pair, not per row.
 * Lanes of the reduced vector: [j: rows 0-3 | j+1: rows 0-3 | j: rows 4-7 |
 * j+1: rows 4-7]. Q8 decodes this way throughout; Q4 only its last 1-3
 * blocks (its main loop takes 4 blocks per step, below). One thread on
 * L2-resident rows (128 x 2048): Q8 35.8 -> 44.5 GB per CPU-second. */
INLINE __m512i sum_lanes_8rows(const __m512i s[8]) {
    __m512i p[4], q[2];
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) /* 2 lanes per row and block */
        p[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2 * i], s[2 * i + 1]),
                                _mm512_unpackhi_epi32(s[2 * i], s[2 * i + 1]));
    _Pragma("GCC unroll 2") for (int i = 0; i < 2; i++) /* 1 lane per row and quarter block */
        q[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(p[2 * i], p[2 * i + 1]),
                                _mm512_unpackhi_epi64(p[2 * i], p[2 * i + 1]));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(q[0], q[1], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(q[0], q[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Byte offsets from a tile's first block to the scale of each reduced lane. */
INLINE __m512i scale_offsets_8rows(size_t ldw, int block_bytes) {
    int32_t off[16];
    for (int l = 0; l < 16; l++)
        off[l] = (int32_t)((size_t)(l % 4 + 4 * (l / 8)) * ldw) + (l / 4 % 2) * block_bytes;
    return _mm512_loadu_si512((const void *)off);
}

/* The 16 scales in reduced-lane order (block j + 1's lanes zero when two is
 * 0: past the row end), times the activation scales. */
INLINE __m512 scales_8rows(const uint8_t *blk, __m512i off, const float *xs, const int two) {
    __m512i g = two ? _mm512_i32gather_epi32(off, (const void *)blk, 1)
                    : _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), 0x0f0f, off,
                                                  (const void *)blk, 1);
    __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g));
    /* xs holds each block scale 8 times: from the 5th copy of block j on,
     * 4 of j then 4 of j + 1 */
    __m256 dx = two ? _mm256_loadu_ps(xs + 4) : _mm256_maskz_loadu_ps(0x0f, xs + 4);
    return _mm512_mul_ps(dw, _mm512_broadcast_f32x8(dx));
}

/* Rows 0-3 and 4-7 of a pair accumulator as 8 floats. */
INLINE __m256 pair_rows8(__m512 acc) {
    /* rows 0-3: quarters 0 + 1, rows 4-7: quarters 2 + 3 */
    __m512 h = _mm512_add_ps(acc, _mm512_shuffle_f32x4(acc, acc, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castps512_ps256(_mm512_shuffle_f32x4(h, h, _MM_SHUFFLE(2, 0, 2, 0)));
}

/* One pair of blocks (or the lone last block when two is 0) of rows
 * r..r+7 into acc; wcodes(b0, two) gives a row's 64 unsigned weight codes,
 * k the unsigned offset they carry (128 for Q8, 8 for Q4). decode_pairs_
 * walks blocks j0..nb-1 and returns the 8 rows' sums; prefetch says
 * whether the next tile's rows are the caller's to read. */
#define DEF_DECODE_PAIRS(FMT, BLOCK_BYTES, K, WCODES)                                              \
    INLINE __m512 decode_pair_##FMT(const uint8_t *blk, size_t ldw, __m512i off, const int8_t *xq, \
                                    const float *xs, __m512 acc, const int two, int prefetch) {    \
        const __m512i zero = _mm512_setzero_si512();                                               \
        __m512i xv = load_x2(xq, two), s[8];                                                       \
        __m512i corr = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(K), xv)); \
        _Pragma("GCC unroll 8") for (int a = 0; a < 8; a++) {                                      \
            const uint8_t *b0 = blk + (size_t)a * ldw;                                             \
            if (prefetch) _mm_prefetch((const char *)b0 + 8 * ldw, _MM_HINT_T1); /* next tile */   \
            s[a] = _mm512_dpbusd_epi32(corr, WCODES(b0, two), xv);                                 \
        }                                                                                          \
        __m512 sc = scales_8rows(blk, off, xs, two);                                               \
        return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum_lanes_8rows(s)), sc, acc);                   \
    }                                                                                              \
    INLINE __m256 decode_pairs_##FMT(const uint8_t *row, size_t ldw, const int8_t *xq,             \
                                     const float *xs, int nb, int j, int prefetch) {               \
        __m512i off = scale_offsets_8rows(ldw, BLOCK_BYTES);                                       \
        __m512 acc = _mm512_setzero_ps();                                                          \
        for (; j + 2 <= nb; j += 2)                                                                \
            acc = decode_pair_##FMT(row + (size_t)j * BLOCK_BYTES, ldw, off, xq + (size_t)j * 32,  \
                                    xs + (size_t)j * CPU_QSCALE_REP, acc, 1, prefetch);            \
        if (j < nb)                                                                                \
            acc = decode_pair_##FMT(row + (size_t)j * BLOCK_BYTES, ldw, off, xq + (size_t)j * 32,  \
                                    xs + (size_t)j * CPU_QSCALE_REP, acc, 0, prefetch);            \
        return pair_rows8(acc);                                                                    \
    }

/* Q8 codes as unsigned w + 128 (w xor 0x80). */
INLINE __m512i q8_unsigned_2(const uint8_t *b0, int two) {
    return _mm512_xor_si512(load_q8_2(b0, two), _mm512_set1_epi8((char)0x80));
}

DEF_DECODE_PAIRS(q8, CPU_Q8_BLOCK_BYTES, (char)0x80, q8_unsigned_2)
DEF_DECODE_PAIRS(q4, CPU_Q4_BLOCK_BYTES, 8, load_q4_2)

INLINE void qdecode_q8_avx512(const uint8_t *w, size_t ldw, const int8_t *xq, const float *xs,
                              float *y, int nb, int r, int r0, int r1) {
    (void)r0;
    _mm256_storeu_ps(y + r, decode_pairs_q8(w + (size_t)r * ldw, ldw, xq, xs, nb, 0, r + 16 <= r1));
}

/* Q4 decoding 4 blocks (72 bytes) of a row at a time. Two loads hold the
 * group: head = bytes -2..61 (the first word masked off, so nothing before
 * the row is read) and tail = bytes 20..71 (masked to the group's end).
 * The code runs of blocks 0 and 2 lie at dwords 1 and 10 of head, those of
 * blocks 1 and 3 at dwords 0 and 9 of tail, and one dword permute puts the
 * four in the four 128-bit lanes. The low nibbles (c & 15) go against
 * x[0..15] of each block and the high ones ((c >> 4) & 15) against
 * x[16..31], both dpbusd into one accumulator, so the sums come out with 4
 * lanes per block and the cross-row tree has two levels; -8 * sum(x) is
 * subtracted after it. The four scales are in head too (words 1, 10, 19,
 * 28), so 4 rows' scales take two dword permutes, a blend and a word
 * permute, not a gather. One thread on L2-resident rows (128 x 2048):
 * 21.5 GB per CPU-second with qtile, 24.6 with the pairs above, 28.7 with
 * this (26.2 with the prefetches, which pay off from DRAM). */
INLINE __m512i q4_head4(const uint8_t *b0) {
    return _mm512_maskz_loadu_epi16(0xfffffffeu, (const void *)(b0 - 2));
}

/* The codes from head and tail (bytes 20..71 in its first 13 dwords; the
 * rest is not read). */
INLINE __m512i q4_codes4_of(__m512i head, __m512i tail) {
    /* tail is the permute's first table (0-15) and destination: no copy */
    const __m512i idx = _mm512_set_epi32(12, 11, 10, 9, 29, 28, 27, 26, 3, 2, 1, 0, 20, 19, 18, 17);
    return _mm512_permutex2var_epi32(tail, idx, head);
}

INLINE __m512i q4_codes4(__m512i head, const uint8_t *b0) {
    return q4_codes4_of(head, _mm512_maskz_loadu_epi32(0x1fff, (const void *)(b0 + 20)));
}

/* The fp32 scales of 4 rows (heads h0..h3) in the order [block 0: rows
 * 0-3 | block 1 | block 2 | block 3]: dword 4q + a from row a's head holds
 * scale q (dwords 0, 5, 9, 14; in the high half for q = 0 and 2), and one
 * word permute packs the 16 halves for the convert. */
INLINE __m512 q4_scales4(__m512i h0, __m512i h1, __m512i h2, __m512i h3) {
    const __m512i idx = _mm512_set_epi32(30, 14, 30, 14, 25, 9, 25, 9, 21, 5, 21, 5, 16, 0, 16, 0);
    const __m512i halves = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30, 28,
                                            26, 24, 23, 21, 19, 17, 14, 12, 10, 8, 7, 5, 3, 1);
    __m512i s = _mm512_mask_blend_epi32(0xcccc, _mm512_permutex2var_epi32(h0, idx, h1),
                                        _mm512_permutex2var_epi32(h2, idx, h3));
    return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(halves, s)));
}

/* A zeroed register for a dpbusd to accumulate into: the xor idiom costs
 * no execution port, where the compilers would copy one shared zero (a
 * vector uop per row). */
INLINE __m512i fresh_zero(void) {
    __m512i z;
    __asm__ volatile("vpxord %0, %0, %0" : "=v"(z)); /* volatile: one per use, not CSEd */
    return z;
}

/* Prefetch distance of the Q4 decode, in tiles of 8 rows. One thread from
 * DRAM (1 GiB of 2048-column rows, 768-row calls in alternating order as
 * two threads take tasks, GB per CPU-second, a loaded machine): qtile
 * before 8.7-9.0; each row's next 72 bytes one tile ahead 9.2-9.5, two
 * tiles ahead 9.1-9.7; the tile's 9 lines in address order two tiles
 * ahead 7.2-7.6. */
#define PREFETCH_TILES 2

/* Sums of 4 blocks of 8 rows into acc03 (rows 0-3) and acc47; lanes:
 * [block j: rows 0-3 | j+1 | j+2 | j+3]. */
INLINE void decode_quad_q4(const uint8_t *blk, size_t ldw, const int8_t *xq, const float *xs,
                           __m512 *acc03, __m512 *acc47, const int prefetch) {
    const __m512i k8 = _mm512_set1_epi8(8), nibble = _mm512_set1_epi8(0x0f);
    __m512i xa = _mm512_loadu_si512((const void *)xq),
            xb = _mm512_loadu_si512((const void *)(xq + 64));
    __m512i x_lo = _mm512_shuffle_i32x4(xa, xb, _MM_SHUFFLE(2, 0, 2, 0));
    __m512i x_hi = _mm512_shuffle_i32x4(xa, xb, _MM_SHUFFLE(3, 1, 3, 1));
    __m512i t[8], head[8];
    _Pragma("GCC unroll 8") for (int a = 0; a < 8; a++) {
        const uint8_t *b0 = blk + (size_t)a * ldw;
        /* the same 72 bytes (two lines) of a later tile's row; a task's
         * first tile warms up the tile after it as well */
        if (prefetch) {
            _mm_prefetch((const char *)b0 + PREFETCH_TILES * 8 * ldw, _MM_HINT_T1);
            _mm_prefetch((const char *)b0 + PREFETCH_TILES * 8 * ldw + 64, _MM_HINT_T1);
        }
        if (prefetch == 2) {
            _mm_prefetch((const char *)b0 + 8 * ldw, _MM_HINT_T1);
            _mm_prefetch((const char *)b0 + 8 * ldw + 64, _MM_HINT_T1);
        }
        head[a] = q4_head4(b0);
        __m512i c = q4_codes4(head[a], b0);
        __m512i l = _mm512_dpbusd_epi32(fresh_zero(), _mm512_and_si512(c, nibble), x_lo);
        t[a] = _mm512_dpbusd_epi32(l, _mm512_and_si512(_mm512_srli_epi16(c, 4), nibble), x_hi);
    }
    /* the codes' offset: 8 * sum(x) of each block, in all 4 of its lanes */
    __m512i xsum =
        _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), k8, x_lo), k8, x_hi);
    xsum = _mm512_add_epi32(xsum, _mm512_shuffle_epi32(xsum, _MM_PERM_BADC));
    xsum = _mm512_add_epi32(xsum, _mm512_shuffle_epi32(xsum, _MM_PERM_CDAB));
    __m512i p[4];
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) p[i] =
        _mm512_add_epi32(_mm512_unpacklo_epi32(t[2 * i], t[2 * i + 1]),
                         _mm512_unpackhi_epi32(t[2 * i], t[2 * i + 1]));
    __m512i s03 =
        _mm512_add_epi32(_mm512_unpacklo_epi64(p[0], p[1]), _mm512_unpackhi_epi64(p[0], p[1]));
    __m512i s47 =
        _mm512_add_epi32(_mm512_unpacklo_epi64(p[2], p[3]), _mm512_unpackhi_epi64(p[2], p[3]));
    s03 = _mm512_sub_epi32(s03, xsum);
    s47 = _mm512_sub_epi32(s47, xsum);
    /* x scales [j x4 | j+1 x4 | j+2 x4 | j+3 x4] */
    __m512 dx = _mm512_shuffle_f32x4(_mm512_loadu_ps(xs), _mm512_loadu_ps(xs + 16),
                                     _MM_SHUFFLE(2, 0, 2, 0));
    __m512 dw03 = q4_scales4(head[0], head[1], head[2], head[3]);
    __m512 dw47 = q4_scales4(head[4], head[5], head[6], head[7]);
    *acc03 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s03), _mm512_mul_ps(dw03, dx), *acc03);
    *acc47 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s47), _mm512_mul_ps(dw47, dx), *acc47);
}

/* The 4 rows of a quad accumulator: the sum of its four 128-bit lanes. */
INLINE __m128 quad_rows4(__m512 acc) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* The 4-block steps of rows r..r+7 from block 0 on; returns the first
 * block left over. */
INLINE int decode_quads_q4(const uint8_t *row, size_t ldw, const int8_t *xq, const float *xs,
                           int nb, __m512 *acc03, __m512 *acc47, const int prefetch) {
    int j = 0;
    for (; j + 4 <= nb; j += 4)
        decode_quad_q4(row + (size_t)j * CPU_Q4_BLOCK_BYTES, ldw, xq + (size_t)j * 32,
                       xs + (size_t)j * CPU_QSCALE_REP, acc03, acc47, prefetch);
    return j;
}

INLINE void qdecode_q4_avx512(const uint8_t *w, size_t ldw, const int8_t *xq, const float *xs,
                              float *y, int nb, int r, int r0, int r1) {
    const uint8_t *row = w + (size_t)r * ldw;
    __m512 acc03 = _mm512_setzero_ps(), acc47 = _mm512_setzero_ps();
    /* no prefetching past the caller's rows (another task's), and the
     * first tile of a task warms up the tile after it as well */
    int j;
    if (r + (PREFETCH_TILES + 1) * 8 > r1)
        j = decode_quads_q4(row, ldw, xq, xs, nb, &acc03, &acc47, 0);
    else if (r == r0)
        j = decode_quads_q4(row, ldw, xq, xs, nb, &acc03, &acc47, 2);
    else
        j = decode_quads_q4(row, ldw, xq, xs, nb, &acc03, &acc47, 1);
    __m256 quads =
        _mm256_insertf128_ps(_mm256_castps128_ps256(quad_rows4(acc03)), quad_rows4(acc47), 1);
    if (j < nb)
        quads = _mm256_add_ps(quads, decode_pairs_q4(row, ldw, xq, xs, nb, j, r + 16 <= r1));
    _mm256_storeu_ps(y + r, quads);
}

CPU_DEF_QMATMUL_LOOPS(q8_avx512, 8, 4, 4)
CPU_DEF_QMATMUL_LOOPS(q4_avx512, 8, 4, 4)

/* ---- decoding one row at a time (qgemv.h) -------------------------------
 * The rows of a task in address order, each from its first block to its
 * last, so a task reads one sequential stream; 4 accumulators over
 * consecutive steps hide the latency of the dot products. What does not
 * depend on the weights is prepared once per call and chunk of blocks:
 * for Q8 the correction -128 * sum(x) of each pair (the weights are the
 * unsigned operand, w xor 0x80); for Q4 each group of 4 blocks' low and
 * high activation halves in the lane order of q4_codes4, the correction
 * -8 * sum(x) and the activation scales, so a row step is its own loads,
 * the unpack, two vpdpbusd and one convert, scale product and FMA. PF:
 * 64-byte lines prefetched ahead in the stream, at most up to `end` (the
 * task's last byte). */
#define QROW_CHUNK 512 /* blocks per chunk of prepared activations */

typedef struct {
    __m512i lo, hi, ncorr;
    __m512 dx;
} q4_quad_x;

INLINE void prefetch_ahead(const uint8_t *p, const uint8_t *end, const int PF) {
    if (PF > 0 && p + PF * 64 < end) _mm_prefetch((const char *)p + PF * 64, _MM_HINT_T0);
}

INLINE __m512 q8_row_pair(const uint8_t *b0, const int8_t *xq, const float *xs, __m512i ncorr,
                          __m512 acc, const int two) {
    __m512i s = _mm512_dpbusd_epi32(ncorr, q8_unsigned_2(b0, two), load_x2(xq, two));
    __m512 sc = _mm512_mul_ps(scales2(b0, two ? b0 + CPU_Q8_BLOCK_BYTES : NULL), load_s2(xs, two));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc, acc);
}

/* Blocks 0..nbc-1 of one Q8 row (row, xq and xs at the chunk's first block). */
INLINE float q8_row(const uint8_t *row, const int8_t *xq, const float *xs, const __m512i *ncorr,
                    int nbc, const uint8_t *end, const int PF) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int j = 0;
    for (; j + 8 <= nbc; j += 8)
        _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++) {
            const uint8_t *b0 = row + (size_t)(j + 2 * u) * CPU_Q8_BLOCK_BYTES;
            prefetch_ahead(b0, end, PF);
            acc[u] = q8_row_pair(b0, xq + (size_t)(j + 2 * u) * 32,
                                 xs + (size_t)(j + 2 * u) * CPU_QSCALE_REP, ncorr[j / 2 + u], acc[u],
                                 1);
        }
    for (; j + 2 <= nbc; j += 2)
        acc[0] = q8_row_pair(row + (size_t)j * CPU_Q8_BLOCK_BYTES, xq + (size_t)j * 32,
                             xs + (size_t)j * CPU_QSCALE_REP, ncorr[j / 2], acc[0], 1);
    if (j < nbc)
        acc[0] = q8_row_pair(row + (size_t)j * CPU_Q8_BLOCK_BYTES, xq + (size_t)j * 32,
                             xs + (size_t)j * CPU_QSCALE_REP, ncorr[j / 2], acc[0], 0);
    return _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

/* Blocks j..j+3 of one Q4 row (72 bytes from b0). whole: bytes b0 - 2 to
 * b0 + 84 are the caller's to read, so the two loads need no mask (on this
 * Zen 5, masked loads that miss left the hardware prefetcher idle: the
 * masked row kernel streamed 7-8 GB per CPU-second without a software
 * prefetch, 29-32 with one). */
INLINE __m512 q4_row_quad(const uint8_t *b0, const q4_quad_x *x, __m512 acc, int whole) {
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    /* the four fp16 scales (words 1, 10, 19, 28 of head), each in 4 lanes */
    const __m512i idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 28, 28, 28,
                                         28, 19, 19, 19, 19, 10, 10, 10, 10, 1, 1, 1, 1);
    __m512i head = whole ? _mm512_loadu_si512((const void *)(b0 - 2)) : q4_head4(b0);
    __m512i c = whole ? q4_codes4_of(head, _mm512_loadu_si512((const void *)(b0 + 20)))
                      : q4_codes4(head, b0);
    __m512i s = _mm512_dpbusd_epi32(x->ncorr, _mm512_and_si512(c, nibble), x->lo);
    s = _mm512_dpbusd_epi32(s, _mm512_and_si512(_mm512_srli_epi16(c, 4), nibble), x->hi);
    __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, head)));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, x->dx), acc);
}

/* A pair of Q4 blocks (or the lone last one) of one row, unprepared. */
INLINE __m512 q4_row_pair(const uint8_t *b0, const int8_t *xq, const float *xs, __m512 acc,
                          const int two) {
    const __m512i zero = _mm512_setzero_si512();
    __m512i xv = load_x2(xq, two);
    __m512i ncorr = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(8), xv));
    __m512i s = _mm512_dpbusd_epi32(ncorr, load_q4_2(b0, two), xv);
    __m512 sc = _mm512_mul_ps(scales2(b0, two ? b0 + CPU_Q4_BLOCK_BYTES : NULL), load_s2(xs, two));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc, acc);
}

/* start, end: the task's first and last + 1 bytes (what may be read). */
INLINE float q4_row(const uint8_t *row, const int8_t *xq, const float *xs, const q4_quad_x *xp,
                    int nbc, const uint8_t *start, const uint8_t *end, const int PF) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int j = 0;
    for (; j + 16 <= nbc; j += 16)
        _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++) {
            const uint8_t *b0 = row + (size_t)(j + 4 * u) * CPU_Q4_BLOCK_BYTES;
            prefetch_ahead(b0, end, PF);
            acc[u] = q4_row_quad(b0, &xp[j / 4 + u], acc[u], b0 >= start + 2 && end - b0 >= 84);
        }
    for (; j + 4 <= nbc; j += 4) {
        const uint8_t *b0 = row + (size_t)j * CPU_Q4_BLOCK_BYTES;
        acc[0] = q4_row_quad(b0, &xp[j / 4], acc[0], b0 >= start + 2 && end - b0 >= 84);
    }
    for (; j < nbc; j += 2)
        acc[1] = q4_row_pair(row + (size_t)j * CPU_Q4_BLOCK_BYTES, xq + (size_t)j * 32,
                             xs + (size_t)j * CPU_QSCALE_REP, acc[1], j + 1 < nbc);
    return _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

/* The pairs' corrections of a chunk of nbc blocks. */
INLINE void q8_prepare(const int8_t *xq, int nbc, __m512i *ncorr) {
    const __m512i zero = _mm512_setzero_si512(), k80 = _mm512_set1_epi8((char)0x80);
    for (int j = 0; j < nbc; j += 2)
        ncorr[j / 2] = _mm512_sub_epi32(
            zero, _mm512_dpbusd_epi32(zero, k80, load_x2(xq + (size_t)j * 32, j + 1 < nbc)));
}

/* The whole groups of 4 blocks of a chunk (the rest is unprepared). */
INLINE void q4_prepare(const int8_t *xq, const float *xs, int nbc, q4_quad_x *xp) {
    const __m512i zero = _mm512_setzero_si512(), k8 = _mm512_set1_epi8(8);
    for (int j = 0; j + 4 <= nbc; j += 4) {
        __m512i xa = _mm512_loadu_si512((const void *)(xq + (size_t)j * 32)),
                xb = _mm512_loadu_si512((const void *)(xq + (size_t)j * 32 + 64));
        q4_quad_x *p = &xp[j / 4];
        p->lo = _mm512_shuffle_i32x4(xa, xb, _MM_SHUFFLE(2, 0, 2, 0));
        p->hi = _mm512_shuffle_i32x4(xa, xb, _MM_SHUFFLE(3, 1, 3, 1));
        p->ncorr = _mm512_sub_epi32(
            zero, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, k8, p->lo), k8, p->hi));
        const float *s = xs + (size_t)j * CPU_QSCALE_REP;
        p->dx = _mm512_shuffle_f32x4(_mm512_loadu_ps(s), _mm512_loadu_ps(s + 16),
                                     _MM_SHUFFLE(2, 0, 2, 0));
    }
}

INLINE void q8_rows(const uint8_t *w, size_t ldw, const int8_t *xq, const float *xs, float *y,
                    int nb, int r0, int r1, const int PF) {
    __m512i ncorr[QROW_CHUNK / 2];
    const uint8_t *end = w + (size_t)(r1 - 1) * ldw + (size_t)nb * CPU_Q8_BLOCK_BYTES;
    for (int j0 = 0; j0 < nb; j0 += QROW_CHUNK) {
        int nbc = nb - j0 < QROW_CHUNK ? nb - j0 : QROW_CHUNK;
        q8_prepare(xq + (size_t)j0 * 32, nbc, ncorr);
        for (int r = r0; r < r1; r++) {
            float s = q8_row(w + (size_t)r * ldw + (size_t)j0 * CPU_Q8_BLOCK_BYTES,
                             xq + (size_t)j0 * 32, xs + (size_t)j0 * CPU_QSCALE_REP, ncorr, nbc,
                             end, PF);
            y[r] = j0 ? y[r] + s : s;
        }
    }
}

INLINE void q4_rows(const uint8_t *w, size_t ldw, const int8_t *xq, const float *xs, float *y,
                    int nb, int r0, int r1, const int PF) {
    q4_quad_x xp[QROW_CHUNK / 4];
    const uint8_t *start = w + (size_t)r0 * ldw;
    const uint8_t *end = w + (size_t)(r1 - 1) * ldw + (size_t)nb * CPU_Q4_BLOCK_BYTES;
    for (int j0 = 0; j0 < nb; j0 += QROW_CHUNK) {
        int nbc = nb - j0 < QROW_CHUNK ? nb - j0 : QROW_CHUNK;
        q4_prepare(xq + (size_t)j0 * 32, xs + (size_t)j0 * CPU_QSCALE_REP, nbc, xp);
        for (int r = r0; r < r1; r++) {
            float s = q4_row(w + (size_t)r * ldw + (size_t)j0 * CPU_Q4_BLOCK_BYTES,
                             xq + (size_t)j0 * 32, xs + (size_t)j0 * CPU_QSCALE_REP, xp, nbc, start,
                             end, PF);
            y[r] = j0 ? y[r] + s : s;
        }
    }
}

/* A cpu_qmatmul_fn: one activation row one weight row at a time, more
 * through the table's kernel. */
#define DEF_QGEMV_R1(FMT, PF)                                                                      \
    static void qgemv_##FMT##_r1_pf##PF(CPU_QMATMUL_ARGS) {                                        \
        if (n != 1 || r0 >= r1) {                                                                  \
            cpu_qmatmul_##FMT##_avx512(w, ldw, xq, ldq, xs, lds, y, ldy, n, nb, r0, r1);           \
            return;                                                                                \
        }                                                                                          \
        FMT##_rows((const uint8_t *)w, ldw, xq, xs, y, nb, r0, r1, PF);                            \
    }
DEF_QGEMV_R1(q8, 0)
DEF_QGEMV_R1(q8, 8)
DEF_QGEMV_R1(q8, 16)
DEF_QGEMV_R1(q4, 0)
DEF_QGEMV_R1(q4, 8)
DEF_QGEMV_R1(q4, 16)
DEF_QGEMV_R1(q8, 32)
DEF_QGEMV_R1(q8, 64)
DEF_QGEMV_R1(q4, 32)
DEF_QGEMV_R1(q4, 64)

/* ---- decoding Q4 interleaved by 16 rows (q4_interleave.h) ----------------
 * A group's 16 rows are the 16 lanes: per block, 4 aligned loads of codes,
 * each giving the low nibbles (against 4 activation bytes broadcast, the
 * block's x[4c..4c+3]) and the high ones (x[16+4c..]) to a vpdpbusd, then
 * one convert and scale product and FMA for the 16 rows: no sums across
 * lanes and no permutes. The correction -8 * sum(x) of each block starts
 * its sums (cpu_q4x16_corrections, once per chunk). A task
 * reads its groups as one sequential stream, which the hardware prefetcher
 * follows: one thread from DRAM on this Zen 4 streamed 29.6 GB/s without a
 * software prefetch and 23.4 with one 1 KiB ahead (k = 2048; from L2 55.8
 * and 57.5, where the row kernels ran 19.3-27.8). */
INLINE __m512i x_bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* One block's 16 row sums (codes at c, activations at x) from ncorr. */
INLINE __m512i x16_block(const uint8_t *c, const int8_t *x, int32_t ncorr) {
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    __m512i lo = _mm512_set1_epi32(ncorr), hi = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {
        __m512i v = _mm512_loadu_si512((const void *)(c + q * 64));
        lo = _mm512_dpbusd_epi32(lo, _mm512_and_si512(v, nibble), x_bcast4(x + 4 * q));
        hi = _mm512_dpbusd_epi32(hi, _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble),
                                 x_bcast4(x + 16 + 4 * q));
    }
    return _mm512_add_epi32(lo, hi);
}

/* Blocks 0..nbc-1 of one group (e at its first pair) against one
 * activation row: the 16 rows' sums into y (added to y when accumulate). */
INLINE void x16_group_to(const uint8_t *e, const int8_t *xq, const float *xs, const int32_t *ncorr,
                         int nbc, float *y, int accumulate) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int j = 0; j < nbc; j += 2, e += CPU_Q4X16_PAIR_BYTES) {
        __m512i sc = _mm512_loadu_si512((const void *)e);
        __m512 dw0 = _mm512_cvtph_ps(_mm512_castsi512_si256(sc));
        __m512 dw1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(sc, 1));
        __m512i s0 = x16_block(e + 64, xq + (size_t)j * 32, ncorr[j]);
        __m512i s1 = x16_block(e + 320, xq + (size_t)(j + 1) * 32, ncorr[j + 1]);
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0),
                               _mm512_mul_ps(dw0, _mm512_set1_ps(xs[(size_t)j * CPU_QSCALE_REP])),
                               acc0);
        acc1 = _mm512_fmadd_ps(
            _mm512_cvtepi32_ps(s1),
            _mm512_mul_ps(dw1, _mm512_set1_ps(xs[(size_t)(j + 1) * CPU_QSCALE_REP])), acc1);
    }
    __m512 v = _mm512_add_ps(acc0, acc1);
    _mm512_storeu_ps(y, accumulate ? _mm512_add_ps(v, _mm512_loadu_ps(y)) : v);
}

CPU_DEF_Q4X16_LOOPS(avx512, QROW_CHUNK)

const cpu_qgemv cpu_qgemv_avx512[] = {
    {"r1-pf0", 0, qgemv_q8_r1_pf0}, {"r1-pf8", 0, qgemv_q8_r1_pf8}, {"r1-pf16", 0, qgemv_q8_r1_pf16},
    {"r1-pf0", 1, qgemv_q4_r1_pf0}, {"r1-pf8", 1, qgemv_q4_r1_pf8}, {"r1-pf16", 1, qgemv_q4_r1_pf16},
    {"r1-pf32", 0, qgemv_q8_r1_pf32}, {"r1-pf64", 0, qgemv_q8_r1_pf64},
    {"r1-pf32", 1, qgemv_q4_r1_pf32}, {"r1-pf64", 1, qgemv_q4_r1_pf64},
};
const int cpu_qgemv_avx512_count = (int)(sizeof cpu_qgemv_avx512 / sizeof cpu_qgemv_avx512[0]);

/* ---- prompts: the int8 GEMM on a task's repacked rows ------------------
 * Outer-product form, as the fp32 GEMM (kernels_driver.h), with vpdpbusd:
 * a panel holds 16 weight rows side by side, 4 codes of each row per 32-bit
 * lane, so one vpdpbusd multiplies 16 rows x 4 codes by the same 4
 * activation bytes broadcast (64 multiply-adds) into one int32 sum per row
 * and token: no horizontal sums. A block of 32 codes is 8 such steps; then
 * its sums are converted and scaled once (convert, times the activation
 * scale, FMA with the 16 rows' weight scales): 3 float ops per 8 vpdpbusd,
 * where the per-row tiles paid 3 per 1. The unsigned operand is the
 * activation as x + 128 (x xor 0x80, copied per tile of tokens), so the
 * correction -128 * sum(w) is per row and block: it is packed with the
 * codes and starts each block's sums.
 *
 * Panel, per group of 16 rows and block j (QP_BLOCK_BYTES = 640): 8 x 64
 * bytes of signed codes ([step][row][4 codes]; Q4 as nibble - 8), the 16
 * fp32 scales, the 16 int32 corrections. Rows past the matrix are zero. */
#define QP_ROWS 16
#define QP_BLOCK_BYTES 640
#define QP_SCALES 512
#define QP_CORR 576
/* Activation rows per tile and columns of them copied (x xor 0x80) at a
 * time: QP_TOKENS rows of QP_KC bytes on the stack, QP_XU_STRIDE apart (a
 * line more than 4 KiB, so the rows do not share the L1's sets). */
#define QP_TOKENS 6
#define QP_KC 4096
#define QP_XU_STRIDE (QP_KC + 64)

/* Blocks ahead that the packing prefetches (a hint: past the row's end it
 * reads the next row's bytes or nothing). */
#define QP_AHEAD 16

static size_t qpanel_bytes_avx512(int rows, int nb) {
    return (size_t)((rows + QP_ROWS - 1) / QP_ROWS) * (size_t)nb * QP_BLOCK_BYTES;
}

/* Blocks j, j+1 of 16 rows (codes(b0, two) = a row's 64 signed codes; rows
 * past `valid` zero) into the panel entries of both blocks (only j's when
 * two is 0). */
#define DEF_QPANEL_PACK(FMT, BLOCK_BYTES, CODES)                                                   \
    static void qpanel_##FMT##_avx512(const void *w, size_t ldw, int nb, int r0, int r1,           \
                                      void *panel) {                                               \
        const __m512i k80 = _mm512_set1_epi8((char)0x80);                                          \
        for (int g = r0; g < r1; g += QP_ROWS) {                                                   \
            int valid = r1 - g < QP_ROWS ? r1 - g : QP_ROWS;                                       \
            uint8_t *dst = (uint8_t *)panel + (size_t)((g - r0) / QP_ROWS) * nb * QP_BLOCK_BYTES;  \
            const uint8_t *row0 = (const uint8_t *)w + (size_t)g * ldw;                            \
            for (int j = 0; j < nb; j += 2) {                                                      \
                int two = j + 1 < nb;                                                              \
                __m512i m[QP_ROWS];                                                                \
                uint16_t d[2][QP_ROWS] = {{0}};                                                    \
                for (int a = 0; a < QP_ROWS; a++) {                                                \
                    const uint8_t *b0 = row0 + (size_t)a * ldw + (size_t)j * BLOCK_BYTES;          \
                    m[a] = _mm512_setzero_si512();                                                 \
                    if (a >= valid) continue;                                                      \
                    /* 16 rows side by side defeat the hardware prefetcher and the                 \
                     * rows come from DRAM (most of the packing time was waiting on                \
                     * the scale loads): ask for each row's bytes QP_AHEAD ahead */                \
                    _mm_prefetch((const char *)b0 + QP_AHEAD * BLOCK_BYTES, _MM_HINT_T0);          \
                    m[a] = CODES(b0, two);                                                         \
                    memcpy(&d[0][a], b0, 2);                                                       \
                    if (two) memcpy(&d[1][a], b0 + BLOCK_BYTES, 2);                                \
                }                                                                                  \
                cpu_transpose16_epi32(m); /* m[c]: dword c of every row */                         \
                for (int h = 0; h <= two; h++) {                                                   \
                    uint8_t *e = dst + (size_t)(j + h) * QP_BLOCK_BYTES;                           \
                    __m512i sum = _mm512_setzero_si512();                                          \
                    for (int c = 0; c < 8; c++) {                                                  \
                        _mm512_storeu_si512((void *)(e + c * 64), m[8 * h + c]);                   \
                        sum = _mm512_dpbusd_epi32(sum, k80, m[8 * h + c]);                         \
                    }                                                                              \
                    _mm512_storeu_ps((float *)(e + QP_SCALES),                                     \
                                     _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)d[h])));  \
                    _mm512_storeu_si512((void *)(e + QP_CORR),                                     \
                                        _mm512_sub_epi32(_mm512_setzero_si512(), sum));            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* A Q4 pair's codes as signed nibble - 8 (a missing second block: 0). */
INLINE __m512i q4_signed_2(const uint8_t *b0, int two) {
    __m512i c = _mm512_sub_epi8(load_q4_2(b0, two), _mm512_set1_epi8(8));
    return two ? c : _mm512_maskz_mov_epi8(0xffffffffULL, c);
}

/* Rows r0..r1 (multiples of 16) of a Q4X16 matrix into panels: a group's
 * code chunk c is already [row][4 bytes], so its low nibbles are panel
 * step c and its high ones step c + 4. */
static void qpanel_q4x16_avx512(const void *w, size_t ldw, int nb, int r0, int r1, void *panel) {
    const __m512i k80 = _mm512_set1_epi8((char)0x80), k8 = _mm512_set1_epi8(8),
                  nibble = _mm512_set1_epi8(0x0f);
    for (int g = r0; g < r1; g += QP_ROWS) {
        uint8_t *dst = (uint8_t *)panel + (size_t)((g - r0) / QP_ROWS) * nb * QP_BLOCK_BYTES;
        const uint8_t *src = (const uint8_t *)w + (size_t)g * ldw;
        for (int j = 0; j < nb; j++) {
            const uint8_t *e = src + (size_t)(j / 2) * CPU_Q4X16_PAIR_BYTES;
            const uint8_t *c = e + 64 + (j % 2) * 256;
            uint8_t *o = dst + (size_t)j * QP_BLOCK_BYTES;
            __m512i sum = _mm512_setzero_si512();
            for (int q = 0; q < 4; q++) {
                __m512i v = _mm512_loadu_si512((const void *)(c + q * 64));
                __m512i lo = _mm512_sub_epi8(_mm512_and_si512(v, nibble), k8);
                __m512i hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), nibble), k8);
                _mm512_storeu_si512((void *)(o + q * 64), lo);
                _mm512_storeu_si512((void *)(o + (q + 4) * 64), hi);
                sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sum, k80, lo), k80, hi);
            }
            __m256i d = _mm256_loadu_si256((const __m256i *)(e + (j % 2) * 32));
            _mm512_storeu_ps((float *)(o + QP_SCALES), _mm512_cvtph_ps(d));
            _mm512_storeu_si512((void *)(o + QP_CORR),
                                _mm512_sub_epi32(_mm512_setzero_si512(), sum));
        }
    }
}

DEF_QPANEL_PACK(q8, CPU_Q8_BLOCK_BYTES, load_q8_2)
DEF_QPANEL_PACK(q4, CPU_Q4_BLOCK_BYTES, q4_signed_2)

/* Blocks 0..nbk-1 of RG groups of 16 rows (p, group stride ldp bytes) x TB
 * tokens (xu: x + 128 at stride ldxu; xs their scales at stride lds, block
 * 0 first) into y[b * ldy + row] (added to y when accumulate; only the
 * first `valid` rows of the last group). RG and TB are constants after
 * inlining: RG x TB int32 and as many fp32 accumulators in registers. */
INLINE void qgemm_tile(const uint8_t *p, size_t ldp, int nbk, const uint8_t *xu, size_t ldxu,
                       const float *xs, size_t lds, float *y, size_t ldy, int valid, int accumulate,
                       const int RG, const int TB) {
    __m512 acc[2][QP_TOKENS];
    _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++)
        _Pragma("GCC unroll 6") for (int b = 0; b < TB; b++) acc[g][b] = _mm512_setzero_ps();
    for (int j = 0; j < nbk; j++) {
        const uint8_t *e = p + (size_t)j * QP_BLOCK_BYTES;
        __m512i s[2][QP_TOKENS];
        _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) {
            __m512i corr = _mm512_loadu_si512((const void *)(e + (size_t)g * ldp + QP_CORR));
            _Pragma("GCC unroll 6") for (int b = 0; b < TB; b++) s[g][b] = corr;
        }
        _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++) {
            __m512i wv[2];
            _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) wv[g] =
                _mm512_loadu_si512((const void *)(e + (size_t)g * ldp + c * 64));
            _Pragma("GCC unroll 6") for (int b = 0; b < TB; b++) {
                int32_t x4;
                memcpy(&x4, xu + (size_t)b * ldxu + (size_t)j * 32 + c * 4, 4);
                __m512i xb = _mm512_set1_epi32(x4);
                _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) s[g][b] =
                    _mm512_dpbusd_epi32(s[g][b], xb, wv[g]);
            }
        }
        _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) {
            __m512 dw = _mm512_loadu_ps((const float *)(e + (size_t)g * ldp + QP_SCALES));
            _Pragma("GCC unroll 6") for (int b = 0; b < TB; b++) {
                __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(s[g][b]),
                                         _mm512_set1_ps(xs[(size_t)b * lds + (size_t)j * 8]));
                acc[g][b] = _mm512_fmadd_ps(v, dw, acc[g][b]);
            }
        }
    }
    _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++)
        _Pragma("GCC unroll 6") for (int b = 0; b < TB; b++) cpu_store16(
            y + (size_t)b * ldy + (size_t)g * QP_ROWS, acc[g][b], valid - g * QP_ROWS, accumulate);
}

#define QGEMM_CASE(RG, TB)                                                                         \
    case TB:                                                                                       \
        qgemm_tile(p, ldp, nbk, xu, ldxu, xs, lds, y, ldy, valid, accumulate, RG, TB);             \
        break;
#define QGEMM_TILES(RG)                                                                            \
    switch (tb) {                                                                                  \
        QGEMM_CASE(RG, 1)                                                                          \
        QGEMM_CASE(RG, 2)                                                                          \
        QGEMM_CASE(RG, 3)                                                                          \
        QGEMM_CASE(RG, 4)                                                                          \
        QGEMM_CASE(RG, 5)                                                                          \
        QGEMM_CASE(RG, 6)                                                                          \
    default:                                                                                       \
        break;                                                                                     \
    }

static void qgemm_tile_any(const uint8_t *p, size_t ldp, int nbk, const uint8_t *xu, size_t ldxu,
                           const float *xs, size_t lds, float *y, size_t ldy, int valid,
                           int accumulate, int rg, int tb) {
    if (rg == 2) {
        QGEMM_TILES(2)
    } else {
        QGEMM_TILES(1)
    }
}

static void qmatmul_panel_avx512(const void *panel, int nb, const int8_t *xq, size_t ldq,
                                 const float *xs, size_t lds, float *y, size_t ldy, int n,
                                 int rows) {
    enum { JB = QP_KC / CPU_QBLOCK };
    uint8_t xu[QP_TOKENS][QP_XU_STRIDE] __attribute__((aligned(64)));
    const __m512i k80 = _mm512_set1_epi8((char)0x80);
    size_t ldp = (size_t)nb * QP_BLOCK_BYTES;
    int groups = (rows + QP_ROWS - 1) / QP_ROWS;
    for (int t = 0; t < n; t += QP_TOKENS) {
        int tb = n - t < QP_TOKENS ? n - t : QP_TOKENS;
        for (int j0 = 0; j0 < nb; j0 += JB) {
            int nbk = nb - j0 < JB ? nb - j0 : JB;
            for (int b = 0; b < tb; b++) {
                const int8_t *src = xq + (size_t)(t + b) * ldq + (size_t)j0 * CPU_QBLOCK;
                for (int i = 0; i < nbk * CPU_QBLOCK; i += 64) {
                    /* a lone last block: its 32 bytes only (the row may end there) */
                    __mmask64 m = i + 64 <= nbk * CPU_QBLOCK ? ~0ULL : 0xffffffffULL;
                    _mm512_store_si512((void *)&xu[b][i],
                                       _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + i), k80));
                }
            }
            for (int g = 0; g < groups; g += 2) {
                int rg = groups - g >= 2 ? 2 : 1;
                qgemm_tile_any(
                    (const uint8_t *)panel + (size_t)g * ldp + (size_t)j0 * QP_BLOCK_BYTES, ldp,
                    nbk, &xu[0][0], QP_XU_STRIDE, xs + (size_t)t * lds + (size_t)j0 * 8, lds,
                    y + (size_t)t * ldy + (size_t)g * QP_ROWS, ldy, rows - g * QP_ROWS, j0 > 0, rg,
                    tb);
            }
        }
    }
}

const cpu_qpanel_kernels cpu_qpanel_avx512 = {
    .pack = {qpanel_q8_avx512, qpanel_q4_avx512, qpanel_q4x16_avx512},
    .matmul = qmatmul_panel_avx512,
    .panel_bytes = qpanel_bytes_avx512,
};
