/* The NEON burner for cpu_peak.h: 12 independent 4-wide FMA chains. */
#include <arm_neon.h>

#include "cpu/cpu_peak.h"

double cpu_fma_burn_neon(long iters, float *sink) {
    float32x4_t a[12], m = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-7f);
    for (int j = 0; j < 12; j++)
        a[j] = vdupq_n_f32(*sink + (float)j);
    for (long i = 0; i < iters; i++) {
        _Pragma("GCC unroll 12") for (int j = 0; j < 12; j++) a[j] = vfmaq_f32(c, a[j], m);
    }
    float32x4_t s = a[0];
    for (int j = 1; j < 12; j++)
        s = vaddq_f32(s, a[j]);
    *sink = vaddvq_f32(s);
    return 12.0 * 4 * 2 * (double)iters;
}
