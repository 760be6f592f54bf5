/* Scalar reference attention kernels: plain loops in the obvious order (the
 * softmax is cpu_softmax's). Every SIMD table is tested against these, and
 * NECTAR_NO_SIMD=1 runs them. */
#include "base/half.h"
#include "cpu/attn_kernels.h"
#include "cpu/cpu_ops.h"

static void softmax_scalar(float *s, int n, int n_pad, float scale) {
    for (int i = 0; i < n; i++)
        s[i] *= scale;
    cpu_softmax(s, n);
    for (int i = n; i < n_pad; i++)
        s[i] = 0.0f;
}

static inline float ld_f32(const void *v, size_t i) {
    return ((const float *)v)[i];
}
static inline float ld_f16(const void *v, size_t i) {
    return nc_fp16_to_f32(((const nc_fp16 *)v)[i]);
}

#define DEF_PV(SUF)                                                                                \
    static void pv_##SUF(const float *p, size_t ldp, const void *v, size_t ldv, float *o,          \
                         size_t ldo, int rows, int keys, int cols) {                               \
        for (int r = 0; r < rows; r++) {                                                           \
            float *orow = o + (size_t)r * ldo;                                                     \
            for (int t = 0; t < keys; t++) {                                                       \
                float pt = p[(size_t)r * ldp + (size_t)t];                                         \
                for (int c = 0; c < cols; c++)                                                     \
                    orow[c] += pt * ld_##SUF(v, (size_t)t * ldv + (size_t)c);                      \
            }                                                                                      \
        }                                                                                          \
    }
DEF_PV(f32)
DEF_PV(f16)

const cpu_attn_kernels cpu_attn_scalar = {
    .softmax = softmax_scalar,
    .pv = {pv_f32, pv_f16},
};
