/* The token mixer of Gated DeltaNet layers (Qwen3.5's linear attention):
 * the causal depthwise conv1d with its rolling window, and the gated delta
 * rule over one head's state S [dk, dv], either token by token (decoding)
 * or in chunks (prefill: the UT transform of the DeltaNet paper, as
 * transformers' torch_chunk_gated_delta_rule and flash-linear-attention's
 * chunk_gated_delta_rule compute it). Both are written as small row-major
 * products y = beta*y + x B, done by a per-ISA kernel (cpu_delta_avx512.c,
 * cpu_delta_avx2.c; the scalar one here is the reference). fp32. */
#ifndef NC_CPU_DELTA_H
#define NC_CPU_DELTA_H

#include <stddef.h>

#include "cpu/cpu_kernels.h"
#include "cpu/rows.h"

/* Longest conv window (K - 1) and value head (dv) the kernels take. */
#define CPU_CONV_MAX_HIST 8
/* Channels one cpu_conv1d_silu call covers: a task's share of the conv. */
#define CPU_CONV_BLOCK 1024
#define CPU_DELTA_MAX_DV 512

/* y[i][0:n] = beta * y[i][0:n] + sum_a x[i][a] * B[a][0:n], i < m, a < k
 * (beta 0: y is not read). Row strides ldy, ldx, ldb in floats. */
typedef void (*cpu_gemm_acc_fn)(int m, int n, int k, const float *x, size_t ldx, const float *B,
                                size_t ldb, float beta, float *y, size_t ldy);

/* The product kernel matching a kernel table's ISA (scalar for "scalar"). */
cpu_gemm_acc_fn cpu_delta_gemm_for(const cpu_kernels *kern);
void cpu_gemm_acc_scalar(int m, int n, int k, const float *x, size_t ldx, const float *B,
                         size_t ldb, float beta, float *y, size_t ldy);
#if defined(__x86_64__) || defined(_M_X64)
void cpu_gemm_acc_avx2(int m, int n, int k, const float *x, size_t ldx, const float *B, size_t ldb,
                       float beta, float *y, size_t ldy);
void cpu_gemm_acc_avx512(int m, int n, int k, const float *x, size_t ldx, const float *B,
                         size_t ldb, float beta, float *y, size_t ldy);
#endif

/* x: n rows of `channels` inputs (row stride ldx), replaced by
 * silu(conv(x)): out[t][c] = sum_j w_t[j][c] * in[t - (K-1) + j][c], where
 * inputs before row 0 come from window ([K-1][channels], oldest first; the
 * last K-1 inputs of the sequence so far), which is then advanced past the
 * n rows. w_t is the weight transposed to [K][channels]. One call does the
 * channels [c0, c0 + CPU_CONV_BLOCK) (fewer at the end), so that blocks
 * can run as separate tasks; the SiLU is the row table's. */
void cpu_conv1d_silu(const cpu_row_kernels *rows, float *x, size_t ldx, int n, int channels,
                     int c0, const float *w_t, int K, float *window);

/* x * 1/sqrt(sum(x^2) + eps) * scale over n elements, in place (the fla
 * library's l2norm, eps 1e-6, then the query's 1/sqrt(dk)). */
void cpu_l2norm_scale(float *x, int n, float eps, float scale);

/* One head of the gated delta rule over n tokens of one sequence. Token t:
 * q, k at q + t*ldqk, k + t*ldqk (dk values, L2-normed, q also scaled by
 * 1/sqrt(dk)), v at v + t*ldv (dv values), its log decay g[t*ldgb] (<= 0)
 * and beta[t*ldgb]; the output row goes to out + t*ldo. */
typedef struct cpu_delta_head {
    const float *q, *k, *v, *g, *beta;
    size_t ldqk, ldv, ldgb, ldo;
    float *out;
    float *state; /* [dk, dv], updated */
    int n, dk, dv;
} cpu_delta_head;

/* S = exp(g) S; S += k (beta (v - S^T k))^T; out = S^T q, per token. */
void cpu_delta_recurrent(const cpu_delta_head *h, cpu_gemm_acc_fn gemm);

/* The same result, chunk tokens at a time (chunk <= 64): each chunk's
 * updates are solved as one lower-triangular system and applied to the
 * state with matrix products. scratch: cpu_delta_scratch_floats(). */
void cpu_delta_chunked(const cpu_delta_head *h, int chunk, float *scratch, cpu_gemm_acc_fn gemm);
size_t cpu_delta_scratch_floats(int chunk, int dk, int dv);

#endif
