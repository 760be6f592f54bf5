/* The row kernels (rows.h) on 4-float NEON vectors. */
#include <arm_neon.h>
#include <math.h>

#include "cpu/rows.h"
#include "cpu/vexp.h"

#define FMA4(a, b, c) vfmaq_f32((c), (a), (b)) /* a * b + c */
#define BLEND_LT(v, lim, r, y) vbslq_f32(vcltq_f32(v, lim), y, r)

CPU_DEF_ROWS(cpu_rows_neon, float32x4_t, 4, vdupq_n_f32, vld1q_f32, vst1q_f32, vaddq_f32, vsubq_f32,
             vmulq_f32, vdivq_f32, vminq_f32, FMA4, vaddvq_f32, cpu_exp_nonpositive4, BLEND_LT)
