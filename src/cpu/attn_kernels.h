/* The attention kernels, one table per instruction set (attn_kernels_scalar.c,
 * _avx2.c, _avx512.c, _neon.c), reached through cpu_kernels.attn and used by
 * cpu_attention.c: the softmax of a row of scores and the product of the
 * probabilities with the value rows, the output tile held in registers while
 * the keys stream past (each value row loaded once per tile of query rows). */
#ifndef NC_CPU_ATTN_KERNELS_H
#define NC_CPU_ATTN_KERNELS_H

#include <stddef.h>

typedef struct cpu_attn_kernels {
    /* s[r * lds + t] = sum over d < dim of q[r * ldq + d] * k[t * ldk + d]
     * for r < rows, t < keys: the scores against fp32 key rows. Optional:
     * NULL where the table's fp32 matmul serves as well. */
    void (*qk)(const float *q, size_t ldq, const float *k, size_t ldk, float *s, size_t lds,
               int rows, int keys, int dim);
    /* s[0, n) = softmax(s[0, n) * scale) in fp32 as transformers computes it
     * (scaled, max-subtracted, exp; the sum in double), and s[n, n_pad) = 0 so
     * that a row with fewer keys can join a P.V tile over n_pad keys. n >= 1. */
    void (*softmax)(float *s, int n, int n_pad, float scale);
    /* o[r * ldo + c] += sum over t < keys of p[r * ldp + t] * v[t * ldv + c]
     * for r < rows, c < cols: probabilities times value rows, the values fp32
     * ([0]) or fp16 ([1], an fp16 KV cache); accumulates, so the keys can
     * come in chunks. */
    void (*pv[2])(const float *p, size_t ldp, const void *v, size_t ldv, float *o, size_t ldo,
                  int rows, int keys, int cols);
    /* qk and pv for one query row's group heads (decoding), the key or value
     * rows fp32 ([0]) or fp16 ([1]) read once from memory, not from a copy:
     * each row whole and in order, or with its lines asked for ahead, since
     * the hardware prefetchers of some CPUs (AMD Zen 4) do not follow the
     * tiles' interleaved rows. Optional: NULL where the table's matmul and
     * pv serve. */
    void (*qk_stream[2])(const float *q, size_t ldq, const void *k, size_t ldk, float *s,
                         size_t lds, int rows, int keys, int dim);
    void (*pv_stream[2])(const float *p, size_t ldp, const void *v, size_t ldv, float *o,
                         size_t ldo, int rows, int keys, int cols);
} cpu_attn_kernels;

extern const cpu_attn_kernels cpu_attn_scalar;
#if defined(__x86_64__) || defined(_M_X64)
extern const cpu_attn_kernels cpu_attn_avx2;
extern const cpu_attn_kernels cpu_attn_avx512;
#endif
#if defined(__aarch64__)
extern const cpu_attn_kernels cpu_attn_neon;
#endif

#endif
