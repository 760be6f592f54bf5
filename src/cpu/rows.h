/* Per-row kernels of the kernel table (cpu_kernels.rows): the LayerNorm and
 * residual add that the encoders run on every token row between products,
 * the rotate-half RoPE of every head (encoders and decoders), the decoders'
 * RMSNorm and gated MLP activations, and Qwen3.5's conv (its multiply-add
 * and SiLU). The scalar reference is rows_scalar.c; the SIMD files
 * instantiate CPU_DEF_ROWS, one vector body per instruction set. */
#ifndef NC_CPU_ROWS_H
#define NC_CPU_ROWS_H

#include <stddef.h>
#include <string.h>

typedef struct cpu_row_kernels {
    /* out = (x - mean(x)) / sqrt(var(x) + eps) * w over n values (biased
     * variance, as torch's layer_norm); out may be x. Sums are fp32 in
     * vector lanes, of x - x[0] for the mean, then of (x - mean)^2. */
    void (*layernorm)(float *out, const float *x, const float *w, int n, float eps);
    /* dst[i] += src[i] */
    void (*add)(float *dst, const float *src, size_t n);
    /* dst[i] += a[i] * b[i] (Qwen3.5's depthwise conv) */
    void (*mul_add)(float *dst, const float *a, const float *b, size_t n);
    /* Rotate-half RoPE on one head of head_dim values in place, h = head_dim
     * / 2: v[i], v[i + h] by the angle of cos_t[i], sin_t[i] (cpu_ops.h's
     * cpu_rope_angles). */
    void (*rope)(float *v, const float *cos_t, const float *sin_t, int head_dim);
    /* out = x / sqrt(mean(x^2) + eps) * w over n values (HF's RMSNorm in
     * fp32); out may be x. The sum of squares is fp32 in vector lanes. */
    void (*rmsnorm)(float *out, const float *x, const float *w, int n, float eps);
    /* out[i] = silu(g[i]) * u[i] (SwiGLU), and = gelu_tanh(g[i]) * u[i]
     * (GeGLU with the tanh GELU, Gemma). Both are x * sigmoid(y), sigmoid
     * from e^-|y| (vexp.h: within 2 ulp of expf; the scalar table calls
     * expf), so nothing overflows; out may be g or u. */
    void (*silu_mul)(float *out, const float *g, const float *u, size_t n);
    void (*gelu_tanh_mul)(float *out, const float *g, const float *u, size_t n);
    /* out[i] = sigmoid(g[i]) * u[i] (Qwen3.5's gated attention output),
     * the same sigmoid; out may be g or u. */
    void (*sigmoid_mul)(float *out, const float *g, const float *u, size_t n);
    /* out[i] = silu(x[i]) (Qwen3.5's conv output), the same SiLU; out may
     * be x. */
    void (*silu)(float *out, const float *x, size_t n);
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
 * SET1(f), LOAD(p), STORE(p, v), ADD, SUB, MUL, DIV, MIN, FMA(a, b, c) =
 * a * b + c, REDUCE(v) = the sum of v's lanes as a float, EXPNP(v) = e^v
 * for v <= 0, BLEND_LT(v, lim, r, y) = per lane y where v < lim, else r.
 * Tails past the last whole vector run as scalar code, except the gates'
 * and the SiLU's: theirs run through a padded copy, so every element gets
 * the same exp. */
#define CPU_DEF_ROWS(NAME, VEC, WIDTH, SET1, LOAD, STORE, ADD, SUB, MUL, DIV, MIN, FMA, REDUCE,    \
                     EXPNP, BLEND_LT)                                                              \
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
    static void NAME##_mul_add(float *dst, const float *a, const float *b, size_t n) {             \
        size_t i = 0;                                                                              \
        for (; i + WIDTH <= n; i += WIDTH)                                                         \
            STORE(dst + i, FMA(LOAD(a + i), LOAD(b + i), LOAD(dst + i)));                          \
        for (; i < n; i++)                                                                         \
            dst[i] += a[i] * b[i];                                                                 \
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
    static void NAME##_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {     \
        int i = 0;                                                                                 \
        VEC q = SET1(0.0f);                                                                        \
        for (; i + WIDTH <= n; i += WIDTH) {                                                       \
            VEC v = LOAD(x + i);                                                                   \
            q = FMA(v, v, q);                                                                      \
        }                                                                                          \
        float sq = REDUCE(q);                                                                      \
        for (; i < n; i++)                                                                         \
            sq += x[i] * x[i];                                                                     \
        float r = 1.0f / sqrtf(sq / (float)n + eps);                                               \
        VEC rv = SET1(r);                                                                          \
        for (i = 0; i + WIDTH <= n; i += WIDTH)                                                    \
            STORE(out + i, MUL(LOAD(w + i), MUL(LOAD(x + i), rv)));                                \
        for (; i < n; i++)                                                                         \
            out[i] = w[i] * (x[i] * r);                                                            \
    }                                                                                              \
    /* 1 / (1 + e^-y) from t = e^-|y| <= 1: 1 / (1 + t) for y >= 0, t / (1 + t) below */            \
    static inline __attribute__((always_inline)) VEC NAME##_sigmoid(VEC y) {                       \
        VEC t = EXPNP(MIN(y, SUB(SET1(0.0f), y)));                                                 \
        return DIV(BLEND_LT(y, SET1(0.0f), SET1(1.0f), t), ADD(SET1(1.0f), t));                    \
    }                                                                                              \
    static inline __attribute__((always_inline)) VEC NAME##_silu(VEC x) {                          \
        return MUL(x, NAME##_sigmoid(x));                                                          \
    }                                                                                              \
    /* 0.5 x (1 + tanh(y)) = x sigmoid(2y), y = sqrt(2/pi) (x + 0.044715 x^3) */                   \
    static inline __attribute__((always_inline)) VEC NAME##_gelu_tanh(VEC x) {                     \
        VEC y = MUL(SET1(1.5957691216057308f), FMA(MUL(SET1(0.044715f), MUL(x, x)), x, x));        \
        return MUL(x, NAME##_sigmoid(y));                                                          \
    }                                                                                              \
    CPU_DEF_ROWS_GATE(NAME##_silu_mul, NAME##_silu, VEC, WIDTH, SET1, LOAD, STORE, MUL)            \
    CPU_DEF_ROWS_GATE(NAME##_gelu_tanh_mul, NAME##_gelu_tanh, VEC, WIDTH, SET1, LOAD, STORE, MUL)  \
    CPU_DEF_ROWS_GATE(NAME##_sigmoid_mul, NAME##_sigmoid, VEC, WIDTH, SET1, LOAD, STORE, MUL)      \
    CPU_DEF_ROWS_MAP(NAME##_silu_row, NAME##_silu, WIDTH, LOAD, STORE)                             \
    const cpu_row_kernels NAME = {.layernorm = NAME##_layernorm,                                   \
                                  .add = NAME##_add,                                               \
                                  .mul_add = NAME##_mul_add,                                       \
                                  .rope = NAME##_rope,                                             \
                                  .rmsnorm = NAME##_rmsnorm,                                       \
                                  .silu_mul = NAME##_silu_mul,                                     \
                                  .gelu_tanh_mul = NAME##_gelu_tanh_mul,                           \
                                  .sigmoid_mul = NAME##_sigmoid_mul,                               \
                                  .silu = NAME##_silu_row};

/* out[i] = ACT(g[i]) * u[i] for CPU_DEF_ROWS; the tail through a padded copy. */
#define CPU_DEF_ROWS_GATE(FN, ACT, VEC, WIDTH, SET1, LOAD, STORE, MUL)                             \
    static void FN(float *out, const float *g, const float *u, size_t n) {                         \
        size_t i = 0;                                                                              \
        for (; i + WIDTH <= n; i += WIDTH)                                                         \
            STORE(out + i, MUL(ACT(LOAD(g + i)), LOAD(u + i)));                                    \
        if (i < n) {                                                                               \
            float gb[WIDTH] = {0}, ub[WIDTH] = {0};                                                \
            memcpy(gb, g + i, (n - i) * sizeof *gb);                                               \
            memcpy(ub, u + i, (n - i) * sizeof *ub);                                               \
            STORE(gb, MUL(ACT(LOAD(gb)), LOAD(ub)));                                               \
            memcpy(out + i, gb, (n - i) * sizeof *gb);                                             \
        }                                                                                          \
    }

/* out[i] = ACT(x[i]) for CPU_DEF_ROWS; the tail through a padded copy. */
#define CPU_DEF_ROWS_MAP(FN, ACT, WIDTH, LOAD, STORE)                                              \
    static void FN(float *out, const float *x, size_t n) {                                         \
        size_t i = 0;                                                                              \
        for (; i + WIDTH <= n; i += WIDTH)                                                         \
            STORE(out + i, ACT(LOAD(x + i)));                                                      \
        if (i < n) {                                                                               \
            float xb[WIDTH] = {0};                                                                 \
            memcpy(xb, x + i, (n - i) * sizeof *xb);                                               \
            STORE(xb, ACT(LOAD(xb)));                                                              \
            memcpy(out + i, xb, (n - i) * sizeof *xb);                                             \
        }                                                                                          \
    }

#endif
