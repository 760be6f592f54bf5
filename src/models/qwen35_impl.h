/* Inside the Qwen3.5 engine: the structs shared by the loader
 * (qwen35_load.c), the per-sequence state (qwen35_state.c) and the forward
 * pass (qwen35.c). As in Qwen3 the model owns the weights, the pool and one
 * batch workspace; a state owns one sequence's caches. */
#ifndef NC_MODELS_QWEN35_IMPL_H
#define NC_MODELS_QWEN35_IMPL_H

#include "base/pool.h"
#include "cpu/cpu_delta.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_scratch.h"
#include "io/hf_weights.h"
#include "models/dec_model.h"
#include "models/dec_rows.h"
#include "models/qwen35.h"

#define QWEN35_LOGIT_ROWS DEC_LOGIT_ROWS

typedef struct qwen35_layer {
    int is_full;
    int slot; /* index among the full (KV cache) or the linear (recurrent state) layers */
    const float *attn_norm, *mlp_norm; /* (1 + w), fp32 */
    /* full attention: q holds the query and the output gate of each head,
     * [heads * 2 * head_dim, hidden] */
    const float *q_norm, *k_norm; /* (1 + w) */
    cpu_mat q, k, v, o;
    /* linear attention (Gated DeltaNet) */
    cpu_mat qkv, z, b, a, out;
    const float *conv_w;  /* [K][conv_dim]: conv1d weight transposed */
    const float *neg_A;   /* -exp(A_log), [v heads] */
    const float *dt_bias; /* [v heads] */
    const float *gnorm;   /* gated RMSNorm weight (plain w), [dv] */
    cpu_mat gate, up, down;
} qwen35_layer;

typedef struct qwen35_workspace {
    float *x, *xb;     /* [rows, hidden] */
    float *big;        /* [rows, max(2 q_dim, conv_dim)]: q+gate, or the conv'd q/k/v */
    float *q, *k, *v;  /* full attention, [rows, q_dim / kv_dim] */
    float *gate, *att; /* [rows, q_dim]: output gate; attention out */
    float *z, *core;   /* [rows, v heads * dv]: gate of the gated norm; delta-rule out */
    float *ba;         /* [rows, 2 * v heads]: b then a projections; beta then g */
    float *hb, *hb2;   /* [rows, intermediate] */
    float *rope_cos, *rope_sin;
    float *scores;        /* as Qwen3's */
    float *logits;        /* [QWEN35_LOGIT_ROWS, vocab] */
    float *delta_scratch; /* per pool thread, cpu_delta_scratch_floats */
    size_t delta_floats;
    qwen35_state **row_state; /* each row's sequence (the rest of the row plan: b.rows) */
} qwen35_workspace;

struct qwen35_model {
    dec_model b; /* folder, weights, pool, kernels, KV type, row plan and scratch */
    qwen35_config cfg;
    cpu_gemm_acc_fn delta_gemm; /* the delta rule's products, kern's ISA */
    int n_linear;
    qwen35_layer *layers;
    cpu_mat embed, lm_head;
    const float *final_norm;
    float *small;    /* every fp32 vector (norms, conv weights, A, dt_bias) */
    float *inv_freq; /* rotary_dim / 2 */
    qwen35_workspace ws;
    qwen35_layer_hook layer_hook; /* NULL: off */
    void *layer_hook_user;
};

/* Sequence state. The linear layers' states have absorbed tokens
 * [0, lin_pos); lin_pos < pos only after a truncation, and the next forward
 * first replays tokens[lin_pos, pos) (docs/qwen35.md). */
struct qwen35_state {
    const qwen35_model *m;
    int ctx, pos, lin_pos;
    int32_t *tokens;         /* [ctx]: the sequence so far */
    void *k_cache, *v_cache; /* [full layers, kv heads, ctx, head_dim] (dec_kv.h) */
    float *conv;             /* [linear layers, K - 1, conv_dim] */
    float *rec;              /* [linear layers, v heads, dk, dv] */
    /* the linear states as they were after snap_pos tokens (the end of the
     * last multi-token forward), -1: none */
    float *snap_conv, *snap_rec;
    int snap_pos;
    /* qwen35_state_checkpoint: the next forward snapshots at this position
     * (after its replay rows) instead of at its end; -1: none */
    int snap_at;
    /* a layer state's (qwen35_state_new_layers): layer -> its index among
     * the full or the linear layers it keeps (-1: none); NULL: all */
    int *slot;
    int n_kv, n_lin; /* the full and linear layers it keeps */
};

/* Keeps the linear states at lin_pos as the snapshot. */
void qwen35_state_snapshot(qwen35_state *s);

size_t qwen35_conv_dim(const qwen35_config *c);
size_t qwen35_conv_floats(const qwen35_config *c); /* per linear layer */
size_t qwen35_rec_floats(const qwen35_config *c);  /* per linear layer */

#endif
