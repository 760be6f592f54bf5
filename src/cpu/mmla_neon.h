/* Storing the 2 x 2 result blocks of the arm64 matrix-multiply instructions
 * (smmla in qkernels_i8mm_neon.c, bfmmla in gemm_bf16_neon.c), whose lanes
 * are [row r tok t, r t+1, r+1 t, r+1 t+1]: into y[tok * ldy + row], only
 * rows < valid and tokens < tb, added to y when accumulate. Header only,
 * inlined with the includer's -march. */
#ifndef NC_CPU_MMLA_NEON_H
#define NC_CPU_MMLA_NEON_H

#include <arm_neon.h>
#include <stddef.h>

static inline __attribute__((always_inline)) void cpu_mmla_store(float *y, size_t ldy,
                                                                 float32x4_t v, int row, int tok,
                                                                 int valid, int tb,
                                                                 int accumulate) {
    float part[4];
    vst1q_f32(part, v);
    for (int l = 0; l < 4; l++) {
        int r = row + l / 2, t = tok + l % 2;
        float *o = y + (size_t)t * ldy + (size_t)r;
        if (r < valid && t < tb) *o = accumulate ? *o + part[l] : part[l];
    }
}

#endif
