/* Scalar reference kernels: plain loops in the obvious order. Every SIMD
 * version is tested against these, and NECTAR_NO_SIMD=1 runs them. */
#include "base/half.h"
#include <string.h>

#include "cpu/attn_kernels.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_peak.h"
#include "cpu/cpu_quant.h"
#include "cpu/gelu.h"
#include "cpu/kernels_driver.h"
#include "cpu/rows.h"

static inline float ld_f32(const void *w, size_t i) {
    return ((const float *)w)[i];
}
static inline float ld_f16(const void *w, size_t i) {
    return nc_fp16_to_f32(((const nc_fp16 *)w)[i]);
}
static inline float ld_bf16(const void *w, size_t i) {
    return nc_bf16_to_f32(((const nc_bf16 *)w)[i]);
}

#define DEF_MATMUL(SUF)                                                                            \
    static void matmul_##SUF(const void *w, size_t ldw, const float *x, size_t ldx, float *y,      \
                             size_t ldy, int n, int k, int r0, int r1) {                           \
        for (int t = 0; t < n; t++)                                                                \
            for (int r = r0; r < r1; r++) {                                                        \
                const float *xr = x + (size_t)t * ldx;                                             \
                size_t base = (size_t)r * ldw;                                                     \
                float acc = 0.0f;                                                                  \
                for (int i = 0; i < k; i++)                                                        \
                    acc += xr[i] * ld_##SUF(w, base + (size_t)i);                                  \
                y[(size_t)t * ldy + (size_t)r] = acc;                                              \
            }                                                                                      \
    }                                                                                              \
    static void row_##SUF(const void *src, float *dst, int n) {                                    \
        for (int i = 0; i < n; i++)                                                                \
            dst[i] = ld_##SUF(src, (size_t)i);                                                     \
    }
DEF_MATMUL(f32)
DEF_MATMUL(f16)
DEF_MATMUL(bf16)

static void row_q8(const void *src, float *dst, int n) {
    cpu_dequantize_row(CPU_W_Q8, src, dst, n);
}
static void row_q4(const void *src, float *dst, int n) {
    cpu_dequantize_row(CPU_W_Q4, src, dst, n);
}

/* Block-quantized weights against int8 activations: an exact integer sum per
 * block, scaled by both block scales and accumulated in fp32. */
static int32_t q8_block_dot(const uint8_t *blk, const int8_t *x) {
    const int8_t *q = (const int8_t *)(blk + 2);
    int32_t s = 0;
    for (int i = 0; i < CPU_QBLOCK; i++)
        s += (int32_t)q[i] * x[i];
    return s;
}
static int32_t q4_block_dot(const uint8_t *blk, const int8_t *x) {
    int32_t s = 0;
    for (int i = 0; i < 16; i++)
        s += ((blk[2 + i] & 15) - 8) * (int32_t)x[i] + ((blk[2 + i] >> 4) - 8) * (int32_t)x[i + 16];
    return s;
}

#define DEF_QMATMUL(SUF, BLOCK_BYTES)                                                              \
    static void qmatmul_##SUF(const void *w, size_t ldw, const int8_t *xq, size_t ldq,             \
                              const float *xs, size_t lds, float *y, size_t ldy, int n, int nb,    \
                              int r0, int r1) {                                                    \
        for (int t = 0; t < n; t++)                                                                \
            for (int r = r0; r < r1; r++) {                                                        \
                const uint8_t *row = (const uint8_t *)w + (size_t)r * ldw;                         \
                float acc = 0.0f;                                                                  \
                for (int j = 0; j < nb; j++) {                                                     \
                    const uint8_t *blk = row + (size_t)j * BLOCK_BYTES;                            \
                    nc_fp16 dh;                                                                    \
                    memcpy(&dh, blk, 2);                                                           \
                    float d =                                                                      \
                        nc_fp16_to_f32(dh) * xs[(size_t)t * lds + (size_t)j * CPU_QSCALE_REP];     \
                    acc += d * (float)SUF##_block_dot(blk, xq + (size_t)t * ldq + (size_t)j * 32); \
                }                                                                                  \
                y[(size_t)t * ldy + (size_t)r] = acc;                                              \
            }                                                                                      \
    }
DEF_QMATMUL(q8, CPU_Q8_BLOCK_BYTES)
DEF_QMATMUL(q4, CPU_Q4_BLOCK_BYTES)

/* The prompt GEMM in the obvious order: blocks of GEMM_NR rows, each packed
 * as [k][GEMM_NR], and one plain sum per output. */
#define GEMM_NR 8

static void gemm_pack_scalar(cpu_wtype t, const void *w, size_t ldw, int k, int r0, int r1,
                             float *panel) {
    static float (*const ld[CPU_W_N])(const void *, size_t) = {[CPU_W_F32] = ld_f32,
                                                               [CPU_W_F16] = ld_f16,
                                                               [CPU_W_BF16] = ld_bf16,
                                                               [CPU_W_Q8] = ld1_q8,
                                                               [CPU_W_Q4] = ld1_q4};
    int padded_end = r0 + (r1 - r0 + GEMM_NR - 1) / GEMM_NR * GEMM_NR;
    for (int r = r0; r < padded_end; r++) {
        float *blk = panel + (size_t)((r - r0) / GEMM_NR) * GEMM_NR * (size_t)k;
        const void *row = (const unsigned char *)w + (size_t)r * ldw;
        for (int i = 0; i < k; i++)
            blk[(size_t)i * GEMM_NR + (size_t)((r - r0) % GEMM_NR)] =
                r < r1 ? ld[t](row, (size_t)i) : 0.0f;
    }
}

static void gemm_run_scalar(const float *panel, int k, int rows, const float *x, size_t ldx,
                            float *y, size_t ldy, int n) {
    for (int t = 0; t < n; t++)
        for (int r = 0; r < rows; r++) {
            const float *col = panel + (size_t)(r / GEMM_NR) * GEMM_NR * (size_t)k + r % GEMM_NR;
            float acc = 0.0f;
            for (int i = 0; i < k; i++)
                acc += x[(size_t)t * ldx + (size_t)i] * col[(size_t)i * GEMM_NR];
            y[(size_t)t * ldy + (size_t)r] = acc;
        }
}

const cpu_kernels cpu_kernels_scalar = {
    .name = "scalar",
    .matmul = {[CPU_W_F32] = matmul_f32, [CPU_W_F16] = matmul_f16, [CPU_W_BF16] = matmul_bf16},
    .qmatmul = {qmatmul_q8, qmatmul_q4},
    .gemm = {.nr = GEMM_NR, .pack = gemm_pack_scalar, .run = gemm_run_scalar},
    .attn = &cpu_attn_scalar,
    .fma_burn = cpu_fma_burn_scalar,
    .row_to_f32 = {[CPU_W_F32] = row_f32,
                   [CPU_W_F16] = row_f16,
                   [CPU_W_BF16] = row_bf16,
                   [CPU_W_Q8] = row_q8,
                   [CPU_W_Q4] = row_q4},
    .gelu = cpu_gelu_scalar,
    .rows = &cpu_rows_scalar,
};
