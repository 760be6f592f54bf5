/* Causal grouped-query attention over a KV cache, fp32. Query row i of the
 * batch sits at position pos0 + i and sees cache rows 0..pos0 + i; query
 * head h reads KV head h / (n_heads / n_kv_heads). One pool task per
 * (query row, head). */
#ifndef NC_CPU_ATTENTION_H
#define NC_CPU_ATTENTION_H

#include "base/pool.h"
#include "cpu/cpu_kernels.h"

typedef struct cpu_attention_args {
    const float *q;       /* [n, n_heads * head_dim], row stride ldq */
    const float *k_cache; /* [ctx, n_kv_heads * head_dim] */
    const float *v_cache; /* same layout */
    float *out;           /* [n, n_heads * head_dim], row stride ldo */
    size_t ldq, ldo;
    int n, pos0, n_heads, n_kv_heads, head_dim;
    float scale;
    float *scores;        /* per pool thread: scores + thread * scores_stride */
    size_t scores_stride; /* >= pos0 + n */
} cpu_attention_args;

void cpu_attention(nc_pool *pool, const cpu_kernels *kern, const cpu_attention_args *a);

#endif
