/* The KV cache rows of the CPU decoders (Qwen3 and Qwen3.5's full-attention
 * layers): a sequence's cache is [layer][position][kv_dim] elements, fp32 or
 * fp16; one row's keys are RMSNormed per head and rotated before they are
 * stored, as its queries are. */
#ifndef NC_MODELS_DEC_KV_H
#define NC_MODELS_DEC_KV_H

#include <stddef.h>

#include "cpu/rows.h"

/* The shape of one sequence's cache. */
typedef struct dec_kv {
    size_t dim; /* kv_heads * head_dim */
    int ctx;    /* positions per layer */
    int f16;    /* elements are fp16 (else fp32) */
} dec_kv;

/* Layer `layer`'s rows of `cache`, from position 0. */
char *dec_kv_layer(const dec_kv *kv, void *cache, int layer);

/* Row `pos` of layer `layer`: k and v (dim floats each) into the caches,
 * rounded to fp16 when the cache is; *k_rows and *v_rows get the layer's
 * rows for the attention that follows. */
void dec_kv_store(const dec_kv *kv, void *k_cache, void *v_cache, int layer, int pos,
                  const float *k, const float *v, const void **k_rows, const void **v_rows);

/* Per head of x [heads, head_dim]: RMSNorm by w (none when w is NULL:
 * Llama), then RoPE (rotate-half) on the first rot_dim dims with the
 * position's cos/sin [rot_dim / 2]. */
void dec_norm_rope_heads(const cpu_row_kernels *rows, float *x, int heads, int head_dim,
                         const float *w, float eps, const float *cos, const float *sin,
                         int rot_dim);

#endif
