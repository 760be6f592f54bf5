/* Per-row kernels of the kernel table (cpu_kernels.rows): the LayerNorm and
 * residual add that the encoders run on every token row between products,
 * and the rotate-half RoPE of every head (encoders and decoders). The scalar reference is
 * rows_scalar.c; the SIMD files instantiate CPU_DEF_ROWS, one vector body per instruction set. */
#ifndef NC_CPU_ROWS_H
#define NC_CPU_ROWS_H

#include <stddef.h>

typedef struct cpu_row_kernels {
    /* out = (x - mean(x)) / sqrt(var(x) + eps) * w over n values (biased
     * variance, as torch's layer_norm); out may be x. Sums are fp32 in
     * vector lanes, of x - x[0] for the mean, then of (x - mean)^2. */
    void (*layernorm)(float *out, const float *x, const float *w, int n, float eps);
    /* dst[i] += src[i] */
    void (*add)(float *dst, const float *src, size_t n);
    /* Rotate-half RoPE on one head of head_dim values in place, h = head_dim
     * / 2: v[i], v[i + h] by the angle of cos_t[i], sin_t[i] (cpu_ops.h's
     * cpu_rope_angles). */
    void (*rope)(float *v, const float *cos_t, const float *sin_t, int head_dim);
} cpu_row_kernels;

extern const cpu_row_kernels cpu_rows_scalar;
#if defined(__x86_64__) || defined(_M_X64)
extern const cpu_row_kernels cpu_rows_avx2;
extern const cpu_row_kernels cpu_rows_avx512;
#endif
#if defined(__aarch64__)
extern const cpu_row_kernels cpu_rows_neon;
#endif

/* Defines the const cpu_row_kernels NAME on vectors VEC of WIDTH floats:
 * SET1(f), LOAD(p), STORE(p, v), ADD, SUB, MUL, FMA(a, b, c) = a * b + c,
 * REDUCE(v) = the sum of v's lanes as a float. Tails past the last whole
 * vector run as scalar code. */
#define CPU_DEF_ROWS(NAME, VEC, WIDTH, SET1, LOAD, STORE, ADD, SUB, MUL, FMA, REDUCE)              \
    static void NAME##_layernorm(float *out, const float *x, const float *w, int n, float eps) {   \
        int i = 0;                                                                                 \
        float shift = x[0]; /* sums of x - x[0]: a common offset costs no bits */                  \
        VEC s = SET1(0.0f), k = SET1(shift);                                                       \
        for (; i + WIDTH <= n; i += WIDTH)                                                         \
            s = ADD(s, SUB(LOAD(x + i), k));                                                       \
        float sum = REDUCE(s), sq;                                                                 \
        for (; i < n; i++)                                                                         \
            sum += x[i] - shift;                                                                   \
        float mean = shift + sum / (float)n;                                                       \
        VEC m = SET1(mean), q = SET1(0.0f);                                                        \
        for (i = 0; i + WIDTH <= n; i += WIDTH) {                                                  \
            VEC c = SUB(LOAD(x + i), m);                                                           \
            q = FMA(c, c, q);                                                                      \
        }                                                                                          \
        sq = REDUCE(q);                                                                            \
        for (; i < n; i++)                                                                         \
            sq += (x[i] - mean) * (x[i] - mean);                                                   \
        float rstd = 1.0f / sqrtf(sq / (float)n + eps);                                            \
        VEC r = SET1(rstd);                                                                        \
        for (i = 0; i + WIDTH <= n; i += WIDTH)                                                    \
            STORE(out + i, MUL(MUL(SUB(LOAD(x + i), m), r), LOAD(w + i)));                         \
        for (; i < n; i++)                                                                         \
            out[i] = (x[i] - mean) * rstd * w[i];                                                  \
    }                                                                                              \
    static void NAME##_add(float *dst, const float *src, size_t n) {                               \
        size_t i = 0;                                                                              \
        for (; i + WIDTH <= n; i += WIDTH)                                                         \
            STORE(dst + i, ADD(LOAD(dst + i), LOAD(src + i)));                                     \
        for (; i < n; i++)                                                                         \
            dst[i] += src[i];                                                                      \
    }                                                                                              \
    static void NAME##_rope(float *v, const float *cos_t, const float *sin_t, int head_dim) {      \
        int h = head_dim / 2, i = 0;                                                               \
        for (; i + WIDTH <= h; i += WIDTH) {                                                       \
            VEC a = LOAD(v + i), b = LOAD(v + i + h), c = LOAD(cos_t + i), s = LOAD(sin_t + i);    \
            STORE(v + i, SUB(MUL(a, c), MUL(b, s)));                                               \
            STORE(v + i + h, FMA(b, c, MUL(a, s)));                                                \
        }                                                                                          \
        for (; i < h; i++) {                                                                       \
            float a = v[i], b = v[i + h];                                                          \
            v[i] = a * cos_t[i] - b * sin_t[i];                                                    \
            v[i + h] = b * cos_t[i] + a * sin_t[i];                                                \
        }                                                                                          \
    }                                                                                              \
    const cpu_row_kernels NAME = {NAME##_layernorm, NAME##_add, NAME##_rope};

#endif
