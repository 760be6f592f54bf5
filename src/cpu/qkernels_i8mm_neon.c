/* The int8 prompt GEMM on FEAT_I8MM (armv8.6, Apple M2 on; compiled with
 * +i8mm and used only where the CPU reports it): smmla multiplies a 2 x 8
 * matrix of signed bytes (two weight rows, 8 codes each) by an 8 x 2 one
 * (two tokens' 8 codes) into a 2 x 2 block of int32 sums, 32 multiply-adds
 * per instruction where the by-element sdot does 16. A panel entry holds,
 * per step s of a block (codes 8s..8s+7), rows (0,1), (2,3), (4,5), (6,7)
 * as [row][8 codes]: 4 steps x 64 bytes (qkernels_neon.h). Tokens are
 * paired in registers (the 8-byte halves of two rows zipped), so the
 * activations are read as quantized. A tile is 8 rows x TB <= 4 tokens:
 * 4 row pairs x 2 token pairs of 2 x 2 sums, lanes [r t, r t+1, r+1 t,
 * r+1 t+1]. */
#include "cpu/mmla_neon.h"
#include "cpu/qkernels_neon.h"

#define MM_PLACE(e, a, codes)                                                                      \
    for (int s_ = 0; s_ < 4; s_++)                                                                 \
    memcpy((e) + s_ * 64 + ((a) / 2) * 16 + ((a) % 2) * 8, (codes) + s_ * 8, 8)

QN_INLINE int8x16_t zip_lo(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
QN_INLINE int8x16_t zip_hi(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

QN_INLINE void mm_tile(const uint8_t *p, int nb, const int8_t *xq, size_t ldq, const float *xs,
                       size_t lds, float *y, size_t ldy, int valid, const int TB) {
    enum { PAIRS = QN_TOKENS / 2 };
    const int TP = (TB + 1) / 2; /* token pairs; a lone last token pairs with zeros */
    float32x4_t acc[4][PAIRS];
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        _Pragma("GCC unroll 2") for (int q = 0; q < TP; q++) acc[r][q] = vdupq_n_f32(0);
    for (int j = 0; j < nb; j++) {
        const uint8_t *e = p + (size_t)j * QN_BLOCK_BYTES;
        int8x16_t xp[PAIRS][4]; /* [pair][step]: 8 codes of token 2q, then of 2q + 1 */
        float32x4_t dx[PAIRS];
        _Pragma("GCC unroll 2") for (int q = 0; q < TP; q++) {
            const int8_t *x0 = xq + (size_t)(2 * q) * ldq + (size_t)j * 32;
            int8x16_t a0 = vld1q_s8(x0), a1 = vld1q_s8(x0 + 16), b0 = vdupq_n_s8(0), b1 = b0;
            float s0 = xs[(size_t)(2 * q) * lds + (size_t)j * CPU_QSCALE_REP], s1 = 0;
            if (2 * q + 1 < TB) {
                b0 = vld1q_s8(x0 + ldq);
                b1 = vld1q_s8(x0 + ldq + 16);
                s1 = xs[(size_t)(2 * q + 1) * lds + (size_t)j * CPU_QSCALE_REP];
            }
            xp[q][0] = zip_lo(a0, b0);
            xp[q][1] = zip_hi(a0, b0);
            xp[q][2] = zip_lo(a1, b1);
            xp[q][3] = zip_hi(a1, b1);
            float32x2_t d2 = vset_lane_f32(s1, vdup_n_f32(s0), 1);
            dx[q] = vcombine_f32(d2, d2);
        }
        int32x4_t s[4][PAIRS];
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
            _Pragma("GCC unroll 2") for (int q = 0; q < TP; q++) s[r][q] = vdupq_n_s32(0);
        _Pragma("GCC unroll 4") for (int st = 0; st < 4; st++)
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
            int8x16_t wv = vld1q_s8((const int8_t *)(e + st * 64 + r * 16));
            _Pragma("GCC unroll 2") for (int q = 0; q < TP; q++) s[r][q] =
                vmmlaq_s32(s[r][q], wv, xp[q][st]);
        }
        /* row scales as [d0 d0 d1 d1], [d2 d2 d3 d3], ... */
        float32x4_t d03 = vld1q_f32((const float *)(e + QN_CODE_BYTES));
        float32x4_t d47 = vld1q_f32((const float *)(e + QN_CODE_BYTES + 16));
        float32x4_t dw[4] = {vzip1q_f32(d03, d03), vzip2q_f32(d03, d03), vzip1q_f32(d47, d47),
                             vzip2q_f32(d47, d47)};
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
            _Pragma("GCC unroll 2") for (int q = 0; q < TP; q++) acc[r][q] =
                vfmaq_f32(acc[r][q], vcvtq_f32_s32(s[r][q]), vmulq_f32(dw[r], dx[q]));
    }
    for (int r = 0; r < 4; r++)
        for (int q = 0; q < TP; q++)
            cpu_mmla_store(y, ldy, acc[r][q], 2 * r, 2 * q, valid, TB, 0);
}

QN_DEF_QPANEL(neon_i8mm, MM_PLACE, mm_tile)
