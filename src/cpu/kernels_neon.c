/* NEON kernels (arm64, where NEON is always present): the AVX2 design with
 * 4-wide vectors. Prompt tiles are 4 weight rows x 4 activation rows (16
 * accumulators of the 32 vector registers), decoding tiles 8 x 1; bf16 is
 * widened by a 16-bit left shift, fp16 by the fcvtl instructions, both in
 * registers. */
#include <arm_neon.h>

#include "base/half.h"
#include "cpu/attn_kernels.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_peak.h"
#include "cpu/gelu.h"
#include "cpu/kernels_driver.h"
#include "cpu/qkernels.h"
#include "cpu/rows.h"

#define INLINE static inline __attribute__((always_inline))

INLINE float32x4_t ldv_f32(const void *w, size_t i) {
    return vld1q_f32((const float *)w + i);
}
INLINE float32x4_t ldv_f16(const void *w, size_t i) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)w + i)));
}
INLINE float32x4_t ldv_bf16(const void *w, size_t i) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)w + i), 16));
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

#define FMA4(w, x, acc) vfmaq_f32(acc, w, x)
#define ZERO4() vdupq_n_f32(0.0f)

/* 4 weights of a Q8 / Q4 row from element i, dequantized element by element:
 * only the prompt GEMM's panel packing reads them. */
INLINE float32x4_t ldv_q8(const void *row, size_t i) {
    float v[4] = {ld1_q8(row, i), ld1_q8(row, i + 1), ld1_q8(row, i + 2), ld1_q8(row, i + 3)};
    return vld1q_f32(v);
}
INLINE float32x4_t ldv_q4(const void *row, size_t i) {
    float v[4] = {ld1_q4(row, i), ld1_q4(row, i + 1), ld1_q4(row, i + 2), ld1_q4(row, i + 3)};
    return vld1q_f32(v);
}

/* The prompt GEMM: 8-row panel blocks (2 q registers) x 12 activation rows,
 * 24 of the 32 registers accumulating. */
#define BCAST4(p) vld1q_dup_f32(p)
CPU_DEF_GEMM(float32x4_t, 4, 12, ZERO4, vld1q_f32, vst1q_f32, vaddq_f32, BCAST4, FMA4)
CPU_DEF_GEMM_PACK_ALL(4, vst1q_f32, CPU_GEMM_TRANSPOSE_PLAIN, NULL)

#define DEF_MATMUL(SUF)                                                                            \
    CPU_DEF_TILE(SUF, float32x4_t, 4, 8, 4, ZERO4, vld1q_f32, FMA4, vaddvq_f32)                    \
    CPU_DEF_MATMUL_LOOPS(SUF, 8, 4, 4)                                                             \
    CPU_DEF_ROW(SUF, 4, vst1q_f32)
DEF_MATMUL(f32)
DEF_MATMUL(f16)
DEF_MATMUL(bf16)
CPU_DEF_ROW(q8, 4, vst1q_f32)
CPU_DEF_ROW(q4, 4, vst1q_f32)

const cpu_kernels cpu_kernels_neon = {
    .name = "neon",
    .matmul = {[CPU_W_F32] = matmul_f32, [CPU_W_F16] = matmul_f16, [CPU_W_BF16] = matmul_bf16},
    .qmatmul = {cpu_qmatmul_q8_neon, cpu_qmatmul_q4_neon},
    .gemm = {.nr = 8, .pack = gemm_pack, .run = gemm_run},
    .attn = &cpu_attn_neon,
    .fma_burn = cpu_fma_burn_neon,
    .row_to_f32 = {[CPU_W_F32] = row_f32,
                   [CPU_W_F16] = row_f16,
                   [CPU_W_BF16] = row_bf16,
                   [CPU_W_Q8] = row_q8,
                   [CPU_W_Q4] = row_q4},
    .gelu = cpu_gelu_scalar,
    .rows = &cpu_rows_neon,
};
