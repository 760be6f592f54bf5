/* The small fp32 steps between the matrix products: RMSNorm, rotary
 * position embedding (rotate-half pairing), the SiLU and GELU gates, softmax. They
 * follow transformers' float32 formulas operation by operation, because the
 * parity tests compare logits to 1e-4. */
#ifndef NC_CPU_OPS_H
#define NC_CPU_OPS_H

#include <stddef.h>

/* out = w * (x * 1/sqrt(mean(x^2) + eps)), n elements; out may alias x. */
void cpu_rmsnorm(float *out, const float *x, const float *w, int n, float eps);

/* inv_freq[i] = 1 / theta^(2i/d) for i < d/2, in fp32 as torch computes it. */
void cpu_rope_inv_freq(float *inv_freq, int head_dim, float theta);
/* cos/sin of pos * inv_freq[i] for i < d/2. */
void cpu_rope_angles(float *cos_out, float *sin_out, const float *inv_freq, int head_dim, int pos);
/* Rotating a head by them: the kernel table's rows->rope (rows.h). */

/* g[i] = silu(g[i]) * u[i]. */
void cpu_silu_mul(float *g, const float *u, int n);
/* g[i] = gelu_tanh(g[i]) * u[i]: GELU's tanh approximation as torch's
 * gelu(approximate="tanh") computes it in fp32 (Gemma's
 * gelu_pytorch_tanh). */
void cpu_gelu_tanh_mul(float *g, const float *u, int n);

/* In place, max-subtracted. */
void cpu_softmax(float *x, int n);

#endif
