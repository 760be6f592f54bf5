/* The KV cache rows of the CPU decoders (Qwen3 and Qwen3.5's full-attention
 * layers): a sequence's cache is [layer][kv head][position][head_dim]
 * elements, fp32 or fp16 (head-major: decoding reads each head's keys and
 * values as one contiguous run, cpu_attention.h); one row's keys are
 * RMSNormed per head and rotated before they are stored, as its queries
 * are. */
#ifndef NC_MODELS_DEC_KV_H
#define NC_MODELS_DEC_KV_H

#include <stddef.h>

#include "cpu/rows.h"

/* The shape of one sequence's cache. */
typedef struct dec_kv {
    size_t dim; /* kv_heads * head_dim */
    int head_dim;
    int ctx; /* positions per layer */
    int f16; /* elements are fp16 (else fp32) */
} dec_kv;

/* Layer `layer`'s rows of `cache`, from position 0. */
char *dec_kv_layer(const dec_kv *kv, void *cache, int layer);

/* Elements from one KV head's rows to the next's in a layer
 * (cpu_attention_args.kv_head_stride). */
size_t dec_kv_head_stride(const dec_kv *kv);

/* Row `pos` of layer `layer`: k and v (dim floats each, [kv head][head_dim])
 * into the caches, rounded to fp16 when the cache is; *k_rows and *v_rows
 * get the layer's rows for the attention that follows. */
void dec_kv_store(const dec_kv *kv, void *k_cache, void *v_cache, int layer, int pos,
                  const float *k, const float *v, const void **k_rows, const void **v_rows);

/* The first n positions of every layer of cache src (shape from) into dst
 * (shape to: the same but for ctx >= n). */
void dec_kv_copy(const dec_kv *to, void *dst, const dec_kv *from, const void *src, int layers,
                 int n);

/* Per head of x [heads, head_dim]: RMSNorm by w (none when w is NULL:
 * Llama), then RoPE (rotate-half) on the first rot_dim dims with the
 * position's cos/sin [rot_dim / 2]. */
void dec_norm_rope_heads(const cpu_row_kernels *rows, float *x, int heads, int head_dim,
                         const float *w, float eps, const float *cos, const float *sin,
                         int rot_dim);

#endif
