/* NEON attention kernels (arm64): P.V tiles of 4 query rows x 6 value
 * vectors (24 of the 32 q registers accumulate, 6 hold the values; checked
 * under qemu, not timed), fp16 values widened by fcvtl in registers; the
 * softmax with a vectorised exp (Cody-Waite reduction, degree-7 polynomial;
 * within 2 ulp of expf), scalar for the n % 4 tail, the sum in double. */
#include <arm_neon.h>
#include <math.h>

#include "cpu/attn_kernels.h"
#include "cpu/attn_kernels_driver.h"

#define INLINE static inline __attribute__((always_inline))

INLINE float32x4_t pv_ldv_f32(const void *v, size_t i) {
    return vld1q_f32((const float *)v + i);
}
INLINE float32x4_t pv_ldv_f16(const void *v, size_t i) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)v + i)));
}

#define FMA4(a, b, acc) vfmaq_f32(acc, a, b)
CPU_DEF_ATTN_PV(f32, f32, float32x4_t, 4, 4, 6, vld1q_f32, vdupq_n_f32, FMA4, vst1q_f32)
CPU_DEF_ATTN_PV(f16, f16, float32x4_t, 4, 4, 6, vld1q_f32, vdupq_n_f32, FMA4, vst1q_f32)

static void softmax_neon(float *s, int n, int n_pad, float scale) {
    int n4 = n / 4 * 4;
    float32x4_t mx4 = vdupq_n_f32(-INFINITY);
    for (int i = 0; i < n4; i += 4)
        mx4 = vmaxq_f32(mx4, vld1q_f32(s + i));
    float mx = vmaxvq_f32(mx4);
    for (int i = n4; i < n; i++)
        mx = s[i] > mx ? s[i] : mx;
    mx *= scale; /* scale > 0 and rounding is monotonic: max(s * scale) = max(s) * scale */
    float32x4_t sv = vdupq_n_f32(scale), mv = vdupq_n_f32(mx);
    float64x2_t sum2 = vdupq_n_f64(0.0);
    for (int i = 0; i < n4; i += 4) {
        float32x4_t e = cpu_exp_nonpositive4(vsubq_f32(vmulq_f32(vld1q_f32(s + i), sv), mv));
        vst1q_f32(s + i, e);
        sum2 = vaddq_f64(sum2, vcvt_f64_f32(vget_low_f32(e)));
        sum2 = vaddq_f64(sum2, vcvt_high_f64_f32(e));
    }
    double sum = vaddvq_f64(sum2);
    for (int i = n4; i < n; i++) {
        s[i] = expf(s[i] * scale - mx);
        sum += s[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n4; i += 4)
        vst1q_f32(s + i, vmulq_n_f32(vld1q_f32(s + i), inv));
    for (int i = n4; i < n; i++)
        s[i] *= inv;
    for (int i = n; i < n_pad; i++)
        s[i] = 0.0f;
}

const cpu_attn_kernels cpu_attn_neon = {
    .softmax = softmax_neon,
    .pv = {pv_f32, pv_f16},
};
