/* Quantized matmul with plain NEON (armv8.0: no sdot, so it runs on every
 * arm64): per 32-weight block, four widening multiplies (int8 x int8 ->
 * int16, at most 127 * 127) folded pairwise into int32 lanes, converted and
 * scaled by both block scales. Q4 nibbles are widened to (nibble - 8) first. */
#include <arm_neon.h>
#include <string.h>

#include "base/half.h"
#include "cpu/qkernels.h"

#define INLINE static inline __attribute__((always_inline))

INLINE float scale_of(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return nc_fp16_to_f32(h);
}

INLINE void load_q8(const uint8_t *blk, int8x16_t *w0, int8x16_t *w1) {
    *w0 = vld1q_s8((const int8_t *)(blk + 2));
    *w1 = vld1q_s8((const int8_t *)(blk + 18));
}
INLINE void load_q4(const uint8_t *blk, int8x16_t *w0, int8x16_t *w1) {
    uint8x16_t p = vld1q_u8(blk + 2);
    int8x16_t eight = vdupq_n_s8(8);
    *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(p, vdupq_n_u8(15))), eight);
    *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(p, 4)), eight);
}

INLINE int32x4_t dot32(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)));
    s = vpadalq_s16(s, vmull_high_s8(w0, x0));
    s = vpadalq_s16(s, vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
    return vpadalq_s16(s, vmull_high_s8(w1, x1));
}

#define DEF_QTILE(FMT, BLOCK_BYTES)                                                                \
    INLINE void qtile_##FMT##_neon(const uint8_t *w, size_t ldw, const int8_t *xq, size_t ldq,     \
                                   const float *xs, size_t lds, float *y, size_t ldy, int nb,      \
                                   int r, int t, const int RB, const int TB) {                     \
        float32x4_t acc[4][4];                                                                     \
        _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++)                                       \
            _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = vdupq_n_f32(0.0f);    \
        for (int j = 0; j < nb; j++) {                                                             \
            int8x16_t w0[4], w1[4];                                                                \
            float dw[4];                                                                           \
            _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {                                 \
                const uint8_t *blk = w + (size_t)(r + a) * ldw + (size_t)j * BLOCK_BYTES;          \
                if (TB == 1) /* decoding: the next tile's rows (kernels_driver.h) */               \
                    __builtin_prefetch(blk + (size_t)RB * ldw);                                    \
                load_##FMT(blk, &w0[a], &w1[a]);                                                   \
                dw[a] = scale_of(blk);                                                             \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {                                 \
                const int8_t *xb = xq + (size_t)(t + b) * ldq + (size_t)j * 32;                    \
                int8x16_t x0 = vld1q_s8(xb), x1 = vld1q_s8(xb + 16);                               \
                float dx = xs[(size_t)(t + b) * lds + (size_t)j * CPU_QSCALE_REP];                 \
                _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) acc[a][b] = vfmaq_n_f32(      \
                    acc[a][b], vcvtq_f32_s32(dot32(w0[a], w1[a], x0, x1)), dw[a] * dx);            \
            }                                                                                      \
        }                                                                                          \
        for (int a = 0; a < RB; a++)                                                               \
            for (int b = 0; b < TB; b++)                                                           \
                y[(size_t)(t + b) * ldy + (size_t)(r + a)] = vaddvq_f32(acc[a][b]);                \
    }

DEF_QTILE(q8, CPU_Q8_BLOCK_BYTES)
DEF_QTILE(q4, CPU_Q4_BLOCK_BYTES)
CPU_DEF_QDECODE_FROM_QTILE(q8_neon, 4)
CPU_DEF_QDECODE_FROM_QTILE(q4_neon, 4)
CPU_DEF_QMATMUL_LOOPS(q8_neon, 4, 4, 2)
CPU_DEF_QMATMUL_LOOPS(q4_neon, 4, 4, 2)
