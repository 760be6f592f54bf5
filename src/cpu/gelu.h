/* The exact (erf) GELU of the kernel table's gelu entry, out = gelu(a) * gate:
 * the scalar reference on libm erff (gelu_scalar.c) and, for the SIMD files,
 * CPU_DEF_GELU, one vector body on a rational erf. Kernel files and tests. */
#ifndef NC_CPU_GELU_H
#define NC_CPU_GELU_H

#include <stddef.h>

/* Below -GELU_CUT the GELU is within 1e-7 of 0 (x Phi(x), Phi(-5.55) =
 * 1.4e-8) and is returned as -0; above it, x itself. The cut also makes
 * gelu(-inf) = -0 (the limit) where 0.5 x (1 + erf) would be -inf * 0. */
#define CPU_GELU_CUT 5.5508f /* 3.925 * sqrt(2): erf(3.925) rounds to 1 in fp32 */

/* out[i] = gelu(a[i]) * gate[i], or gelu(a[i]) when gate is NULL; out may be
 * a (in place). */
void cpu_gelu_scalar(float *out, const float *a, const float *gate, size_t n);
#if defined(__x86_64__) || defined(_M_X64)
void cpu_gelu_avx2(float *out, const float *a, const float *gate, size_t n);
void cpu_gelu_avx512(float *out, const float *a, const float *gate, size_t n);
#endif

/* erf(z) = z P(z^2) / Q(z^2) for |z| <= 3.925 (z clamped there), a rational
 * least-squares fit (degrees 6 / 5 in z^2, weighted by 1/Q, iterated) made
 * for this file; 1.7e-9 from erf in exact arithmetic, 3.4e-7 (~6 ulp near
 * 1) evaluated in fp32. tests/cpu/test_gelu.c checks the GELU against erf in
 * double. */
#define CPU_ERF_P0 1.128379226e+00f
#define CPU_ERF_P1 1.847537607e-01f
#define CPU_ERF_P2 5.431668088e-02f
#define CPU_ERF_P3 3.838750767e-03f
#define CPU_ERF_P4 3.817995603e-04f
#define CPU_ERF_P5 4.754103429e-06f
#define CPU_ERF_P6 -1.352627077e-08f
#define CPU_ERF_Q1 4.970672727e-01f
#define CPU_ERF_Q2 1.138251275e-01f
#define CPU_ERF_Q3 1.544842124e-02f
#define CPU_ERF_Q4 1.308272360e-03f
#define CPU_ERF_Q5 6.376556848e-05f

/* Defines `void NAME(float *out, const float *a, const float *gate, size_t
 * n)` on vectors VEC of WIDTH floats: SET1(f), LOAD(p), STORE(p, v),
 * FMA(a, b, c) = a * b + c, MUL, DIV, MIN, MAX, and BLEND_LT(v, lim, r, y):
 * per lane, y where v < lim, else r. The n % WIDTH tail runs through a
 * padded copy, so every element gets the same approximation. */
#define CPU_DEF_GELU(NAME, VEC, WIDTH, SET1, LOAD, STORE, FMA, MUL, DIV, MIN, MAX, BLEND_LT)       \
    static inline __attribute__((always_inline)) VEC NAME##_vec(VEC x) {                           \
        VEC z = MUL(x, SET1(0.70710678118654752f));                                                \
        z = MIN(MAX(z, SET1(-3.925f)), SET1(3.925f));                                              \
        VEC t = MUL(z, z);                                                                         \
        VEC p = FMA(SET1(CPU_ERF_P6), t, SET1(CPU_ERF_P5));                                        \
        p = FMA(p, t, SET1(CPU_ERF_P4));                                                           \
        p = FMA(p, t, SET1(CPU_ERF_P3));                                                           \
        p = FMA(p, t, SET1(CPU_ERF_P2));                                                           \
        p = FMA(p, t, SET1(CPU_ERF_P1));                                                           \
        p = FMA(p, t, SET1(CPU_ERF_P0));                                                           \
        VEC q = FMA(SET1(CPU_ERF_Q5), t, SET1(CPU_ERF_Q4));                                        \
        q = FMA(q, t, SET1(CPU_ERF_Q3));                                                           \
        q = FMA(q, t, SET1(CPU_ERF_Q2));                                                           \
        q = FMA(q, t, SET1(CPU_ERF_Q1));                                                           \
        q = FMA(q, t, SET1(1.0f));                                                                 \
        VEC erf = DIV(MUL(z, p), q);                                                               \
        VEC r = MUL(x, FMA(erf, SET1(0.5f), SET1(0.5f))); /* x (0.5 + 0.5 erf): gelu(-0) = -0 */   \
        r = BLEND_LT(SET1(CPU_GELU_CUT), x, r, x);                                                 \
        return BLEND_LT(x, SET1(-CPU_GELU_CUT), r, SET1(-0.0f));                                   \
    }                                                                                              \
    void NAME(float *out, const float *a, const float *gate, size_t n) {                           \
        size_t i = 0;                                                                              \
        for (; i + WIDTH <= n; i += WIDTH) {                                                       \
            VEC g = NAME##_vec(LOAD(a + i));                                                       \
            STORE(out + i, gate ? MUL(g, LOAD(gate + i)) : g);                                     \
        }                                                                                          \
        if (i < n) {                                                                               \
            float buf[WIDTH] = {0}, gb[WIDTH];                                                     \
            for (size_t j = 0; j < WIDTH; j++)                                                     \
                gb[j] = 1.0f;                                                                      \
            memcpy(buf, a + i, (n - i) * sizeof *buf);                                             \
            if (gate) memcpy(gb, gate + i, (n - i) * sizeof *gb);                                  \
            STORE(buf, MUL(NAME##_vec(LOAD(buf)), LOAD(gb)));                                      \
            memcpy(out + i, buf, (n - i) * sizeof *buf);                                           \
        }                                                                                          \
    }

#endif
