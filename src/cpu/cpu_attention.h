/* Causal grouped-query attention over fp32 or fp16 KV caches (the math in
 * fp32). Each query row has its own cache (rows of one batch may belong to
 * different sequences) and sees its first n_keys cache rows (its position
 * + 1); query head h reads KV head h / (n_heads / n_kv_heads). One pool task
 * per (window of CPU_ATTENTION_BLOCK rows, KV head), covering the query
 * heads of that group; runs of rows of one sequence in a window share each
 * pass over the cache. */
#ifndef NC_CPU_ATTENTION_H
#define NC_CPU_ATTENTION_H

#include "base/pool.h"
#include "cpu/cpu_kernels.h"

/* Rows per attention block (a prompt's rows share each cache pass). */
#define CPU_ATTENTION_BLOCK 16

/* Room where a prompt's fp16 KV heads are widened once (fp32, [k|v][head]
 * [key][head_dim]); cpu_attention grows it as prompts need, up to
 * CPU_KV_PACK_MAX_BYTES. Zero-initialize; free buf with nc_free_aligned. */
typedef struct cpu_kv_pack {
    float *buf;
    size_t floats;
} cpu_kv_pack;
#define CPU_KV_PACK_MAX_BYTES ((size_t)64 << 20)

typedef struct cpu_attention_args {
    const float *q; /* [n, n_heads * head_dim], row stride ldq */
    float *out;     /* [n, n_heads * head_dim], row stride ldo */
    size_t ldq, ldo;
    /* per row: its cache, head-major, [n_kv_heads][kv_head_stride[row] /
     * head_dim][head_dim] (kv_head_stride: that state's context x
     * head_dim, since states of one batch may differ), a head's positions
     * head_dim apart. Decoding reads a head's keys in one contiguous run;
     * position-major, each 512-byte key of Qwen3-0.6B sat in its own 4 KiB
     * page, out of the hardware prefetchers' reach. */
    const void *const *k_cache;
    const void *const *v_cache; /* same layout */
    const size_t *kv_head_stride;
    int kv_f16;        /* the caches hold fp16 (else fp32) */
    const int *n_keys; /* per row */
    /* per row, the first cache row it sees (a sliding window: Gemma 3's
     * local layers); NULL: 0. Rows of one sequence come in position
     * order, so a run's first row has the smallest. */
    const int *first_key;
    int n, n_heads, n_kv_heads, head_dim;
    float scale;
    float *scores;        /* per pool thread, row of a block and head of a group:
                             scores + ((thread * CPU_ATTENTION_BLOCK + b) * group
                             + g) * scores_stride */
    size_t scores_stride; /* >= every n_keys */
    /* Optional (NULL: every block widens its own chunks of an fp16 cache):
     * where the rows of one sequence, more than one block of them, widen
     * each fp16 KV head once instead of each block widening the keys up to
     * its own rows
     * (for a 571-token prompt, ~18 whole copies of every head: 2.3% of its
     * time). */
    cpu_kv_pack *kv_pack;
} cpu_attention_args;

void cpu_attention(nc_pool *pool, const cpu_kernels *kern, const cpu_attention_args *a);

#endif
