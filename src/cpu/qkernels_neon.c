/* Quantized matmul with plain NEON (armv8.0: no sdot, so it runs on every
 * arm64): per 32-weight block, four widening multiplies (int8 x int8 ->
 * int16, at most 127 * 127) folded pairwise into int32 lanes, converted and
 * scaled by both block scales. Q4 nibbles are widened to (nibble - 8) first
 * (qkernels_neon.h). */
#include "cpu/qkernels_neon.h"

QN_INLINE int32x4_t dot32(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)));
    s = vpadalq_s16(s, vmull_high_s8(w0, x0));
    s = vpadalq_s16(s, vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
    return vpadalq_s16(s, vmull_high_s8(w1, x1));
}

QN_DEF_QMATMUL(neon, dot32)
