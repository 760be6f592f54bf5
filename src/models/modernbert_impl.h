/* Inside the ModernBERT engine: the structs shared by the loader
 * (modernbert_load.c), the forward pass (modernbert.c) and the heads
 * (modernbert_head.c). Matrices stay in the mmap in their stored dtype; the
 * small vectors (norms, biases) are widened to fp32 once. The workspace is
 * sized to the largest batch x sequence seen so far and reused. */
#ifndef NC_MODELS_MODERNBERT_IMPL_H
#define NC_MODELS_MODERNBERT_IMPL_H

#include "base/pool.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_packed.h"
#include "cpu/cpu_scratch.h"
#include "io/hf_weights.h"
#include "models/modernbert.h"

/* Queries per attention task: a block of them shares one pass over its keys. */
#define MODERNBERT_ATT_QBLOCK 32

typedef struct modernbert_layer {
    const float *attn_norm; /* NULL for layer 0 (nn.Identity in HF) */
    const float *mlp_norm;
    cpu_mat wqkv, wo, wi, wo_mlp; /* Wqkv [3D, D], attn Wo [D, D], Wi [2I, D], mlp Wo [D, I] */
    /* the same packed for the prompt GEMM (cpu_packed.h; Wi in two parts,
     * input and gate), where the kernel table packs and the budget allowed */
    cpu_packed pqkv, pwo, pwi, pwo_mlp;
} modernbert_layer;

typedef struct modernbert_workspace {
    size_t rows;                    /* capacity in token rows (batch * seq) */
    int seq_cap;                    /* RoPE tables cover positions < seq_cap */
    float *x, *xn, *att, *hb; /* [rows, D], [rows, D], [rows, D], [rows, I] */
    /* [rows, 3D] each, Q/K/V head by head; the pass by slabs alternates
     * them by layer, so a slab can write the next layer's while another
     * slab's attention still reads this layer's (the other pass uses [0]) */
    float *qkv[2];
    float *raw;    /* [rows, max(3D, 2I)]: an unpacked product before its epilogue */
    float *blocks; /* cpu_packed_matmul's scratch for `rows` rows */
    /* activation tiles (gemm_bf16w.h) of `rows` rows that producers pack for
     * the next product: LayerNorm outputs (D wide), the gated MLP (I wide) */
    float *tiles, *gated_tiles;
    float *rope_cos, *rope_sin; /* [2 (global, local)][seq_cap][head_dim / 2] */
    float *scores;              /* [threads][MODERNBERT_ATT_QBLOCK][seq_cap] */
    cpu_prompt_scratch prompt;  /* fp32 weight panels / AMX tiles, for `rows` rows */
} modernbert_workspace;

struct modernbert_model {
    modernbert_config cfg;
    char *dir;
    hf_weights *weights;
    nc_pool *pool;
    const cpu_kernels *kern;
    modernbert_layer *layers;
    cpu_mat embed;
    const float *embed_norm, *final_norm;
    /* heads (NULL / zero rows when absent) */
    cpu_mat head_dense, decoder, classifier;
    const float *head_dense_bias, *head_norm, *decoder_bias, *classifier_bias;
    float *vecs;              /* one block holding every fp32 vector above */
    float *inv_freq[2];       /* [0] global theta, [1] local theta; head_dim / 2 each */
    size_t pack_budget_bytes; /* packed copies of the layer matrices, at most */
    int is_packed;            /* the packing was done (on the first forward pass) */
    modernbert_workspace ws;
};

/* Grows the workspace to hold batch * seq rows (and seq positions). */
nc_status modernbert_workspace_reserve(modernbert_model *m, int batch, int seq, nc_error *err);

/* Packs the layer matrices for the prompt GEMM, in layer order while the
 * budget lasts (once; later calls return at once). */
nc_status modernbert_pack_weights(modernbert_model *m, nc_error *err);

/* y = x W^T for n rows, with the workspace's prompt scratch (when n fits
 * it) so long inputs take the prompt GEMM / AMX tiles. */
void modernbert_matmul(modernbert_model *m, const cpu_mat *w, const float *x, size_t ldx, float *y,
                       size_t ldy, int n);
/* LayerNorm without bias over n rows of width d (population variance), as
 * torch.nn.LayerNorm(bias=False); out may alias x. Rows split over the pool. */
void modernbert_layernorm_rows(modernbert_model *m, float *out, const float *x, const float *w,
                               int n);
/* y = act(y) elementwise (GELU on m's kernel table). */
void modernbert_act_apply(const modernbert_model *m, modernbert_act act, float *y, size_t n);

#endif
