/* Quantized kernels on FEAT_DotProd (armv8.2+, Apple M1 on; compiled with
 * +dotprod and used only where the CPU reports it): sdot multiplies 16
 * signed bytes by 16 and adds groups of four into 4 int32 lanes, so a
 * 32-code block is two sdot where the armv8.0 file needs four widening
 * multiplies and four pairwise adds. Signed x signed: no offsets to
 * correct. Decoding and short prompts use the per-row tile; prompts the
 * panel GEMM below. */
#include "cpu/qkernels_neon.h"

QN_INLINE int32x4_t dot32_sdot(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
}

QN_DEF_QMATMUL(neon_dotprod, dot32_sdot)

/* ---- prompts: the outer-product int8 GEMM -----------------------------
 * The by-element sdot multiplies 4 weight rows x 4 codes (one q register)
 * by 4 activation codes picked from a lane of another register and adds
 * into each row's int32 sum: no horizontal sums. A panel entry holds, per
 * step c of a block (codes 4c..4c+3), rows 0-3 then rows 4-7 as [row][4
 * codes]: 8 steps x 32 bytes. A tile is 8 rows x TB tokens: 2 x TB int32
 * sums per block, converted and scaled once per block. */
#define DOT_PLACE(e, a, codes)                                                                     \
    for (int c_ = 0; c_ < 8; c_++)                                                                 \
    memcpy((e) + c_ * 32 + ((a) / 4) * 16 + ((a) % 4) * 4, (codes) + c_ * 4, 4)

/* Step c of a block (lane L of activation register H = c / 4) for TB
 * tokens; sdot's lane index must be a constant, hence the macro. */
#define DOT_STEP(C, H, L)                                                                          \
    do {                                                                                           \
        int8x16_t w0 = vld1q_s8((const int8_t *)(e + (C)*32));                                     \
        int8x16_t w1 = vld1q_s8((const int8_t *)(e + (C)*32 + 16));                                \
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {                                     \
            s[0][b] = vdotq_laneq_s32(s[0][b], w0, x[b][H], L);                                    \
            s[1][b] = vdotq_laneq_s32(s[1][b], w1, x[b][H], L);                                    \
        }                                                                                          \
    } while (0)

QN_INLINE void dot_tile(const uint8_t *p, int nb, const int8_t *xq, size_t ldq, const float *xs,
                        size_t lds, float *y, size_t ldy, int valid, const int TB) {
    float32x4_t acc[2][QN_TOKENS];
    _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[0][b] = acc[1][b] = vdupq_n_f32(0);
    for (int j = 0; j < nb; j++) {
        const uint8_t *e = p + (size_t)j * QN_BLOCK_BYTES;
        int8x16_t x[QN_TOKENS][2];
        int32x4_t s[2][QN_TOKENS];
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {
            x[b][0] = vld1q_s8(xq + (size_t)b * ldq + (size_t)j * 32);
            x[b][1] = vld1q_s8(xq + (size_t)b * ldq + (size_t)j * 32 + 16);
            s[0][b] = s[1][b] = vdupq_n_s32(0);
        }
        DOT_STEP(0, 0, 0);
        DOT_STEP(1, 0, 1);
        DOT_STEP(2, 0, 2);
        DOT_STEP(3, 0, 3);
        DOT_STEP(4, 1, 0);
        DOT_STEP(5, 1, 1);
        DOT_STEP(6, 1, 2);
        DOT_STEP(7, 1, 3);
        float32x4_t dw0 = vld1q_f32((const float *)(e + QN_CODE_BYTES));
        float32x4_t dw1 = vld1q_f32((const float *)(e + QN_CODE_BYTES + 16));
        _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {
            float dx = xs[(size_t)b * lds + (size_t)j * CPU_QSCALE_REP];
            acc[0][b] = vfmaq_f32(acc[0][b], vcvtq_f32_s32(s[0][b]), vmulq_n_f32(dw0, dx));
            acc[1][b] = vfmaq_f32(acc[1][b], vcvtq_f32_s32(s[1][b]), vmulq_n_f32(dw1, dx));
        }
    }
    for (int b = 0; b < TB; b++) {
        qn_store4(y + (size_t)b * ldy, acc[0][b], valid);
        if (valid > 4) qn_store4(y + (size_t)b * ldy + 4, acc[1][b], valid - 4);
    }
}

QN_DEF_QPANEL(neon_dotprod, DOT_PLACE, dot_tile)
