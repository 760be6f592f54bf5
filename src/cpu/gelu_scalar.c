/* The reference exact GELU, 0.5 x (1 + erf(x / sqrt 2)) on libm erff, with
 * the cuts of the vector kernels (gelu.h); the scalar and NEON tables use it. */
#include <math.h>

#include "cpu/gelu.h"

static float gelu1(float x) {
    if (x > CPU_GELU_CUT) return x;
    if (x < -CPU_GELU_CUT) return -0.0f;
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

void cpu_gelu_scalar(float *out, const float *a, const float *gate, size_t n) {
    for (size_t i = 0; i < n; i++)
        out[i] = gate ? gelu1(a[i]) * gate[i] : gelu1(a[i]);
}
