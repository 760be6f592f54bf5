/* Prompt matrix products on Intel AMX tiles (Sapphire Rapids and later):
 * TDPBF16PS multiplies 16x32 by 32x16 bf16 tiles into 16x16 fp32, about
 * 14x the fp32 FMA rate of a core. To keep fp32 accuracy the operands are
 * split into sums of bf16 terms: an fp32 activation x = x1 + x2 + x3 exactly
 * (8 + 8 + 8 mantissa bits), a weight into 1 (bf16), 2 (fp16, Q4, Q8) or 3
 * (fp32) terms, and the products of the terms whose sizes add up above the
 * fp32 rounding level are accumulated (bf16 weights: 3 tile products).
 * Rows of bf16 weights are read as tiles straight from the mmap; other types
 * are widened by the table's row converter and split once per call into the
 * caller's scratch. x86-64 only; the
 * portable build answers "not available". */
#ifndef NC_CPU_GEMM_AMX_H
#define NC_CPU_GEMM_AMX_H

#include <stddef.h>

#include "cpu/cpu_kernels.h"

/* Whether this CPU and OS run AMX-BF16 (asks Linux for the tile state once). */
int cpu_amx_available(void);

/* Activations packed as bf16 terms in the tiles' pair-interleaved layout. */
size_t cpu_amx_x_bytes(int n, int k);
/* Packs token block tb (rows 16*tb .. 16*tb+15 of x, zeros past n) into xp. */
void cpu_amx_pack_x(const float *x, size_t ldx, int n, int k, int tb, void *xp);
static inline int cpu_amx_token_blocks(int n) {
    return (n + 15) / 16;
}

/* Scratch per thread for weight rows that cannot be read in place. */
size_t cpu_amx_scratch_bytes(int k);

/* Y[t*ldy + r] = sum_k X[t,k] W[r,k] for t < n, r0 <= r < r1, X packed by
 * cpu_amx_pack_x (all blocks), W of the given type with rows of ldw bytes;
 * to_f32 is the kernel table's row_to_f32[type] (rows that are not bf16
 * tiles in place are widened with it before the bf16 term split). */
typedef void (*cpu_row_fn)(const void *src, float *dst, int n);
void cpu_amx_matmul(cpu_wtype type, cpu_row_fn to_f32, const void *w, size_t ldw, int k, int r0,
                    int r1, const void *xp, int n, float *y, size_t ldy, void *scratch);

/* The peak-rate burner (cpu_peak.h): iters x 4 independent tile products,
 * returns the FLOPs done (a multiply-add counts 2); 0 without AMX. */
double cpu_amx_burn(long iters, float *sink);

#endif
