/* Block-quantized weights and int8 activations. Q8 (llama.cpp's Q8_0): 32
 * weights per block as an fp16 scale d then 32 int8 q, w = d*q (34 bytes).
 * Q4 (Q4_0): an fp16 scale d then 16 bytes; byte i holds weight i in its low
 * nibble and weight i+16 in its high nibble, w = d*(nibble - 8) (18 bytes).
 * A row of `cols` weights is ceil(cols/32) blocks, the tail padded with
 * zeros. Activations are quantized per row in the same blocks (int8, scale
 * amax/127 in fp32) so the inner products are integer dot products. */
#ifndef NC_CPU_QUANT_H
#define NC_CPU_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/cpu_kernels.h"

#define CPU_QBLOCK 32
#define CPU_Q8_BLOCK_BYTES 34
#define CPU_Q4_BLOCK_BYTES 18
/* Copies of each activation block's scale in cpu_qact.s (one vector load). */
#define CPU_QSCALE_REP 8

static inline int cpu_qblocks(int cols) {
    return (cols + CPU_QBLOCK - 1) / CPU_QBLOCK;
}

/* Quantizes one row of `cols` fp32 weights into ceil(cols/32) blocks of type
 * t (CPU_W_Q8 or CPU_W_Q4) at dst. The scale is rounded to fp16 first and the
 * codes are chosen against the rounded scale. */
void cpu_quantize_weight_row(cpu_wtype t, const float *src, int cols, void *dst);
/* The inverse: cols fp32 values from a stored row. */
void cpu_dequantize_row(cpu_wtype t, const void *src, float *dst, int cols);

/* n activation rows quantized for cpu_qmatmul_fn: q is [n, nb*32] int8, s is
 * [n, nb*CPU_QSCALE_REP] floats. */
typedef struct cpu_qact {
    int8_t *q;
    float *s;
    int n, nb;
} cpu_qact;

/* Bytes of q and s for n rows of k values (for sizing workspaces). */
size_t cpu_qact_q_bytes(int n, int k);
size_t cpu_qact_s_bytes(int n, int k);

/* Row t of x (k values, stride ldx) into a->q/a->s; per block d = amax/127,
 * q = round(x/d) (ties away from zero), zeros past k. */
void cpu_quantize_act_row(const float *x, int k, int8_t *q, float *s);

#endif
