/* AVX2 + FMA + F16C kernels. The matmul works on register tiles: RB weight
 * rows x TB activation rows of 8-wide fp32 accumulators, so each weight
 * vector (bf16/fp16 widened to fp32 in a register, never in memory) feeds TB
 * FMAs and each activation vector feeds RB. Decoding (one activation row)
 * uses 4x1 tiles: four independent FMA chains hide the FMA latency. */
#include <immintrin.h>

#include "base/half.h"
#include "cpu/attn_kernels.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_peak.h"
#include "cpu/gelu.h"
#include "cpu/kernels_driver.h"
#include "cpu/qkernels.h"
#include "cpu/rows.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __m256 ldv_f32(const void *w, size_t i) {
    return _mm256_loadu_ps((const float *)w + i);
}
INLINE __m256 ldv_f16(const void *w, size_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i)));
}
INLINE __m256 ldv_bf16(const void *w, size_t i) {
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
INLINE float ld1_f32(const void *w, size_t i) {
    return ((const float *)w)[i];
}
INLINE float ld1_f16(const void *w, size_t i) {
    return nc_fp16_to_f32(((const uint16_t *)w)[i]);
}
INLINE float ld1_bf16(const void *w, size_t i) {
    return nc_bf16_to_f32(((const uint16_t *)w)[i]);
}

INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define FMA8(w, x, acc) _mm256_fmadd_ps(w, x, acc)

/* A block's fp16 scale by the F16C instruction (exact, as nc_fp16_to_f32,
 * which costs a dozen instructions per call in the panel packing). */
INLINE float block_scale(const uint8_t *block) {
    uint16_t d;
    memcpy(&d, block, 2);
    return _cvtsh_ss(d);
}

/* 8 weights of a Q8 / Q4 row from element i (i % 8 == 0, so they lie in one
 * block), dequantized as scale * code. */
INLINE __m256 ldv_q8(const void *row, size_t i) {
    const uint8_t *b = (const uint8_t *)row + i / CPU_QBLOCK * CPU_Q8_BLOCK_BYTES;
    __m128i q = _mm_loadl_epi64((const __m128i *)(b + 2 + i % CPU_QBLOCK));
    return _mm256_mul_ps(_mm256_set1_ps(block_scale(b)),
                         _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
}
/* The low nibbles of q's first 8 bytes as d * (code - 8). */
INLINE __m256 widen_q4(__m128i q, float d) {
    __m256i c = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_and_si128(q, _mm_set1_epi8(15))),
                                 _mm256_set1_epi32(8));
    return _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(c));
}
INLINE __m256 ldv_q4(const void *row, size_t i) {
    const uint8_t *b = (const uint8_t *)row + i / CPU_QBLOCK * CPU_Q4_BLOCK_BYTES;
    size_t e = i % CPU_QBLOCK;
    __m128i q = _mm_loadl_epi64((const __m128i *)(b + 2 + e % 16));
    if (e >= 16) q = _mm_srli_epi16(q, 4); /* weights 16..31: the high nibbles */
    return widen_q4(q, block_scale(b));
}
/* 8 weights of row a of a Q4X16 group at g from column i (i % 8 == 0): the
 * row's code bytes i % 16.. are two 4-byte runs 64 bytes apart. */
INLINE __m256 ldv_q4x16(const uint8_t *g, int a, size_t i) {
    int j = (int)(i / CPU_QBLOCK), e = (int)(i % CPU_QBLOCK);
    const uint8_t *c = g + cpu_q4x16_code_at(j, a, e % 16);
    int32_t lo, hi;
    memcpy(&lo, c, 4);
    memcpy(&hi, c + 64, 4);
    __m128i q = _mm_setr_epi32(lo, hi, 0, 0);
    if (e >= 16) q = _mm_srli_epi16(q, 4);
    return widen_q4(q, block_scale(g + cpu_q4x16_scale_at(j, a)));
}

/* Rows r0..r1 of a Q4X16 matrix straight from its groups into the GEMM's
 * 16-row panel blocks, where r0, r1 are whole groups and k whole blocks
 * (else 0: gemm_pack_q4x16 packs them row by row). The 32 bytes of half h
 * of a code chunk c are 8 rows x code bytes 4c..4c+3: regrouped by code
 * byte (vpshufb, vpermd), each byte b gives those rows' lanes of panel rows
 * 4c + b (its low nibbles) and 16 + 4c + b (its high ones). */
static int q4x16_pack_groups(const void *w, size_t ldw, int k, int r0, int r1, float *panel) {
    if (r0 % CPU_Q4X16_ROWS || r1 % CPU_Q4X16_ROWS || k % CPU_QBLOCK) return 0;
    const __m256i by_byte = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                             0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m256i qwords = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i nibble = _mm256_set1_epi32(15), eight = _mm256_set1_epi32(8);
    enum { NR = CPU_Q4X16_ROWS };
    for (int rb = r0; rb < r1; rb += NR) {
        const uint8_t *g = (const uint8_t *)w + (size_t)rb * ldw;
        float *blk = panel + (size_t)(rb - r0) * (size_t)k;
        for (int j = 0; j < k / CPU_QBLOCK; j++)
            for (int h = 0; h < 2; h++) {
                __m256 d = _mm256_cvtph_ps(
                    _mm_loadu_si128((const __m128i *)(g + cpu_q4x16_scale_at(j, 8 * h))));
                for (int c = 0; c < 4; c++) {
                    __m256i v = _mm256_loadu_si256(
                        (const __m256i *)(g + cpu_q4x16_code_at(j, 8 * h, 4 * c)));
                    v = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, by_byte), qwords);
                    __m128i half[2] = {_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)};
                    _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++) {
                        __m128i q = half[b / 2];
                        __m256i x = _mm256_cvtepu8_epi32(b % 2 ? _mm_srli_si128(q, 8) : q);
                        float *o = blk + (size_t)(j * CPU_QBLOCK + 4 * c + b) * NR + 8 * h;
                        __m256i lo = _mm256_sub_epi32(_mm256_and_si256(x, nibble), eight);
                        __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(x, 4), eight);
                        _mm256_storeu_ps(o, _mm256_mul_ps(d, _mm256_cvtepi32_ps(lo)));
                        _mm256_storeu_ps(o + 16 * NR, _mm256_mul_ps(d, _mm256_cvtepi32_ps(hi)));
                    }
                }
            }
    }
    return 1;
}

/* The prompt GEMM: 16-row panel blocks (2 ymm) x 6 activation rows, 12 of
 * the 16 registers accumulating. */
#define BCAST8(p) _mm256_broadcast_ss(p)
CPU_DEF_GEMM(__m256, 8, 6, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps,
             BCAST8, FMA8)

/* dst[c * 16 + a] = src[a * stride + c] for the panel packing: two 8 x 8
 * register transposes (3 shuffle stages each). */
INLINE void transpose8(const float *src, size_t stride, float *dst) {
    __m256 r[8], t[8], u[8];
    for (int j = 0; j < 8; j++)
        r[j] = _mm256_loadu_ps(src + (size_t)j * stride);
    for (int j = 0; j < 8; j += 2) { /* per 128-bit lane: pairs of rows interleaved */
        t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
        t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
    }
    for (int j = 0; j < 8; j += 4) { /* u[j + e], lane L: rows j..j+3 of column 4L + e */
        u[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
        u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xee);
        u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
        u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xee);
    }
    for (int e = 0; e < 4; e++) {
        _mm256_storeu_ps(dst + (size_t)e * 16, _mm256_permute2f128_ps(u[e], u[4 + e], 0x20));
        _mm256_storeu_ps(dst + (size_t)(4 + e) * 16, _mm256_permute2f128_ps(u[e], u[4 + e], 0x31));
    }
}
#define TRANSPOSE16x8(src, stride, dst, WIDTH)                                                     \
    do {                                                                                           \
        transpose8(src, stride, dst);                                                              \
        transpose8((src) + 8 * (stride), stride, (dst) + 8);                                       \
    } while (0)
CPU_DEF_GEMM_PACK_Q4X16(8, _mm256_storeu_ps, TRANSPOSE16x8)
CPU_DEF_GEMM_PACK_ALL(8, _mm256_storeu_ps, TRANSPOSE16x8, gemm_pack_q4x16)

#define DEF_MATMUL(SUF)                                                                            \
    CPU_DEF_TILE(SUF, __m256, 8, 4, 4, _mm256_setzero_ps, _mm256_loadu_ps, FMA8, hsum8)            \
    CPU_DEF_MATMUL_LOOPS(SUF, 4, 2, 4)                                                             \
    CPU_DEF_ROW(SUF, 8, _mm256_storeu_ps)
DEF_MATMUL(f32)
DEF_MATMUL(f16)
DEF_MATMUL(bf16)
CPU_DEF_ROW(q8, 8, _mm256_storeu_ps)
CPU_DEF_ROW(q4, 8, _mm256_storeu_ps)

const cpu_kernels cpu_kernels_avx2 = {
    .name = "avx2",
    .matmul = {[CPU_W_F32] = matmul_f32, [CPU_W_F16] = matmul_f16, [CPU_W_BF16] = matmul_bf16},
    .qmatmul = {cpu_qmatmul_q8_avx2, cpu_qmatmul_q4_avx2, cpu_qmatmul_q4x16_avx2},
    .gemm = {.nr = 16, .pack = gemm_pack, .run = gemm_run},
    .attn = &cpu_attn_avx2,
    .fma_burn = cpu_fma_burn_avx2,
    .row_to_f32 = {[CPU_W_F32] = row_f32,
                   [CPU_W_F16] = row_f16,
                   [CPU_W_BF16] = row_bf16,
                   [CPU_W_Q8] = row_q8,
                   [CPU_W_Q4] = row_q4},
    .gelu = cpu_gelu_avx2,
    .rows = &cpu_rows_avx2,
};
