/* Inside the Qwen3 engine: the structs shared by the loader (qwen3_load.c)
 * and the forward pass (qwen3.c). The model owns the weights, the thread
 * pool and one workspace for a batch of rows (forwards on a model never
 * overlap, so one is enough and sequences cost only their KV cache); a state
 * is one sequence's KV cache and position. */
#ifndef NC_MODELS_QWEN3_IMPL_H
#define NC_MODELS_QWEN3_IMPL_H

#include "base/pool.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_scratch.h"
#include "io/hf_weights.h"
#include "models/dec_model.h"
#include "models/dec_rows.h"
#include "models/qwen3.h"

/* Rows of logits computed per LM-head call into the workspace. */
#define QWEN3_LOGIT_ROWS DEC_LOGIT_ROWS

typedef struct qwen3_layer {
    const float *attn_norm, *q_norm, *k_norm, *mlp_norm; /* fp32 copies (1 + w: Gemma) */
    const float *post_attn_norm, *post_mlp_norm;         /* Gemma's sandwich norms, or NULL */
    cpu_mat q, k, v, o, gate, up, down;                  /* in the mmap */
} qwen3_layer;

/* Scratch for up to QWEN3_MAX_BATCH rows, each row one token of some
 * sequence: [rows, width] activations plus where each row belongs. */
typedef struct qwen3_workspace {
    float *x, *xb, *q, *k, *v, *att, *hb, *hb2, *rope_cos, *rope_sin;
    /* Gemma's sliding layers: their RoPE angles (own base) and each row's
     * first key (its window's start); NULL without sliding layers */
    float *rope_cos_local, *rope_sin_local;
    int *first_key;
    float *scores; /* [threads, CPU_ATTENTION_BLOCK, heads per KV head, max_position_embeddings] */
    float *logits; /* [QWEN3_LOGIT_ROWS, vocab] */
    qwen3_state **row_state; /* each row's sequence (the rest of the row plan: b.rows) */
} qwen3_workspace;

struct qwen3_model {
    dec_model b; /* folder, weights, pool, kernels, KV type, row plan and scratch */
    qwen3_config cfg;
    qwen3_layer *layers;
    cpu_mat embed, lm_head;
    const float *final_norm;
    float *norms;    /* one block holding every fp32 norm vector */
    float *inv_freq; /* RoPE, head_dim / 2 (Gemma: the global layers') */
    float *inv_freq_local; /* Gemma's sliding layers', or NULL */
    float embed_scale;     /* cfg.embed_scale rounded to the embedding's dtype (0: none) */
    float attn_scale;
    char prefix[32]; /* of the decoder's tensor names: "model." (the multimodal
                        layout's language model: "language_model.model.") */
    qwen3_workspace ws;
    qwen3_layer_hook layer_hook; /* NULL: off */
    void *layer_hook_user;
    /* qwen3_load_layers: where the marked layers come from (else NULL) */
    const qwen3_tensor_source *src;
    const unsigned char *src_layers;
};

struct qwen3_state {
    const qwen3_model *m;
    int ctx, pos;
    int batch;               /* at most this many of its rows per internal batch */
    void *k_cache, *v_cache; /* [layers, kv heads, ctx, head_dim] (dec_kv.h), fp32 or fp16 */
    int *slot; /* a layer state's: layer -> its rows of the caches (-1: none); NULL: all */
};

#endif
