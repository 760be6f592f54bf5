/* The small fp32 steps between the matrix products that no kernel table
 * vectorizes: the rotary position embedding's angles (rotate-half pairing)
 * and softmax. They follow transformers' float32 formulas operation by
 * operation, because the parity tests compare logits to 1e-4. RMSNorm, the
 * SiLU and GELU-tanh gates and the rotation itself are the kernel table's
 * row kernels (rows.h). */
#ifndef NC_CPU_OPS_H
#define NC_CPU_OPS_H

#include <stddef.h>

/* inv_freq[i] = 1 / theta^(2i/d) for i < d/2, in fp32 as torch computes it. */
void cpu_rope_inv_freq(float *inv_freq, int head_dim, float theta);
/* cos/sin of pos * inv_freq[i] for i < d/2. */
void cpu_rope_angles(float *cos_out, float *sin_out, const float *inv_freq, int head_dim, int pos);
/* Rotating a head by them: the kernel table's rows->rope (rows.h). */

/* In place, max-subtracted. */
void cpu_softmax(float *x, int n);

#endif
