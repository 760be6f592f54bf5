/* AVX-512 kernels (F + BW + VL): the AVX2 design at twice the width. The
 * matmul tiles are 6 weight rows x 4 activation rows (24 of the 32 zmm
 * registers accumulate; 6 rows make each activation load feed 6 FMAs, about
 * 13% faster than 4x4 here) for prompts and 8 x 1 for decoding; weights are
 * widened to fp32 in registers. fp32 FMAs only (no vdpbf16ps: it would round the activations
 * to bf16 and break parity with transformers' fp32 math). */
#include <immintrin.h>

#include "base/half.h"
#include "cpu/attn_kernels.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_peak.h"
#include "cpu/gelu.h"
#include "cpu/gemm_bf16w.h"
#include "cpu/kernels_driver.h"
#include "cpu/qkernels.h"
#include "cpu/rows.h"
#include "cpu/transpose_avx512.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __m512 ldv_f32(const void *w, size_t i) {
    return _mm512_loadu_ps((const float *)w + i);
}
INLINE __m512 ldv_f16(const void *w, size_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i)));
}
INLINE __m512 ldv_bf16(const void *w, size_t i) {
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
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

#define FMA16(w, x, acc) _mm512_fmadd_ps(w, x, acc)

/* A block's fp16 scale by the F16C instruction (exact, as nc_fp16_to_f32,
 * which costs a dozen instructions per call in the panel packing). */
INLINE float block_scale(const uint8_t *block) {
    uint16_t d;
    memcpy(&d, block, 2);
    return _cvtsh_ss(d);
}

/* 16 weights of a Q8 / Q4 row from element i (i % 16 == 0, so they lie in
 * one block), dequantized as scale * code. */
INLINE __m512 ldv_q8(const void *row, size_t i) {
    const uint8_t *b = (const uint8_t *)row + i / CPU_QBLOCK * CPU_Q8_BLOCK_BYTES;
    __m128i q = _mm_loadu_si128((const __m128i *)(b + 2 + i % CPU_QBLOCK));
    return _mm512_mul_ps(_mm512_set1_ps(block_scale(b)),
                         _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
}
/* The low nibbles of q's 16 bytes as d * (code - 8). */
INLINE __m512 widen_q4(__m128i q, float d) {
    __m512i c = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(q, _mm_set1_epi8(15))),
                                 _mm512_set1_epi32(8));
    return _mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(c));
}
INLINE __m512 ldv_q4(const void *row, size_t i) {
    const uint8_t *b = (const uint8_t *)row + i / CPU_QBLOCK * CPU_Q4_BLOCK_BYTES;
    __m128i q = _mm_loadu_si128((const __m128i *)(b + 2));
    if (i % CPU_QBLOCK) q = _mm_srli_epi16(q, 4); /* weights 16..31: the high nibbles */
    return widen_q4(q, block_scale(b));
}

/* The prompt GEMM: 32-row panel blocks (2 zmm) x 12 activation rows, 24
 * accumulators. */
#define BCAST16(p) _mm512_set1_ps(*(p))
CPU_DEF_GEMM(__m512, 16, 12, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_add_ps,
             BCAST16, FMA16)

/* dst[c * 32 + a] = src[a * stride + c], a < 16, c < 16, for the panel
 * packing: one register transpose instead of 256 scalar moves. */
INLINE void transpose16(const float *src, size_t stride, float *dst) {
    __m512i m[16];
    for (int j = 0; j < 16; j++)
        m[j] = _mm512_castps_si512(_mm512_loadu_ps(src + (size_t)j * stride));
    cpu_transpose16_epi32(m);
    for (int c = 0; c < 16; c++)
        _mm512_storeu_ps(dst + (size_t)c * 32, _mm512_castsi512_ps(m[c]));
}
#define TRANSPOSE32x16(src, stride, dst, WIDTH)                                                    \
    do {                                                                                           \
        transpose16(src, stride, dst);                                                             \
        transpose16((src) + 16 * (stride), stride, (dst) + 16);                                    \
    } while (0)
CPU_DEF_GEMM_PACK_ALL(16, _mm512_storeu_ps, TRANSPOSE32x16, NULL)

#define DEF_MATMUL(SUF)                                                                            \
    CPU_DEF_TILE(SUF, __m512, 16, 8, 4, _mm512_setzero_ps, _mm512_loadu_ps, FMA16,                 \
                 _mm512_reduce_add_ps)                                                             \
    CPU_DEF_MATMUL_LOOPS(SUF, 8, 6, 4)                                                             \
    CPU_DEF_ROW(SUF, 16, _mm512_storeu_ps)
DEF_MATMUL(f32)
DEF_MATMUL(f16)
DEF_MATMUL(bf16)
CPU_DEF_ROW(q8, 16, _mm512_storeu_ps)
CPU_DEF_ROW(q4, 16, _mm512_storeu_ps)

const cpu_kernels cpu_kernels_avx512 = {
    .name = "avx512",
    .matmul = {[CPU_W_F32] = matmul_f32, [CPU_W_F16] = matmul_f16, [CPU_W_BF16] = matmul_bf16},
    .qmatmul = {cpu_qmatmul_q8_avx512, cpu_qmatmul_q4_avx512, cpu_qmatmul_q4x16_avx512},
    .qpanel = &cpu_qpanel_avx512,
    .gemm = {.nr = 32, .pack = gemm_pack, .run = gemm_run},
    .gemm_bf16w = &cpu_gemm_bf16w_avx512,
    .gemm_bf16w_fast = &cpu_gemm_bf16w_fast_avx512,
    .attn = &cpu_attn_avx512,
    .fma_burn = cpu_fma_burn_avx512,
    .row_to_f32 = {[CPU_W_F32] = row_f32,
                   [CPU_W_F16] = row_f16,
                   [CPU_W_BF16] = row_bf16,
                   [CPU_W_Q8] = row_q8,
                   [CPU_W_Q4] = row_q4},
    .gelu = cpu_gelu_avx512,
    .rows = &cpu_rows_avx512,
};
