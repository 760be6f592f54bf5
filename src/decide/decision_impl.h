/* Inside the decision model: the head's weights (matrices left in the
 * mmap of decision.safetensors, vectors widened to fp32) and the workspace
 * shared by the loader (decision_load.c) and the forward pass (decision.c). */
#ifndef NC_DECIDE_DECISION_IMPL_H
#define NC_DECIDE_DECISION_IMPL_H

#include "base/pool.h"
#include "cpu/cpu_matmul.h"
#include "decide/decision.h"
#include "io/hf_weights.h"

/* A Linear layer: y = x W^T + b. */
typedef struct decision_linear {
    cpu_mat w;
    const float *b;
} decision_linear;

typedef struct decision_layer {
    const float *attn_norm_w, *attn_norm_b, *mlp_norm_w, *mlp_norm_b;
    decision_linear qkv, out, mlp_in, mlp_out; /* [3D, D], [D, D], [I, D], [D, I] */
} decision_layer;

struct decision_model {
    decision_config cfg;
    modernbert_model *enc;
    int borrows_enc; /* enc belongs to the region's runner (decision_bundle.c) */
    hf_weights head_file; /* decision.safetensors as a one-shard set */
    st_file *shard;
    nc_pool *pool;
    const cpu_kernels *kern;
    const float *type_emb; /* [K + 1, D] */
    decision_layer *layers;
    decision_linear scorer1, scorer2, action1, action2;
    float *vecs; /* every fp32 vector above */
    /* workspace for `rows` = batch * seq token rows */
    size_t rows;
    float *h, *xn, *qkv, *att, *mid; /* [rows, D] x3 ([rows, 3D] qkv), [rows, I] */
    float *scores;                   /* [rows, heads]: one row of keys per (row, head) task */
    int32_t *markers, *types;
    /* The NE region run elsewhere (decision_bundle.c): fills x [batch][seq][D]
     * (after the head layers) from the inputs and the resolved type ids.
     * NULL: the CPU pass of decision.c. */
    nc_status (*region)(void *user, const decision_io *io, const int32_t *types, float *x,
                        nc_error *err);
    void *region_user;
    void (*region_free)(void *user);
};

/* decision_load with the encoder already loaded: enc (NULL: loaded from
 * dir) is borrowed and must outlive the model. */
nc_status decision_load_with(const char *dir, modernbert_model *enc, int n_threads,
                             decision_model **out, nc_error *err);

/* Grows the workspace to batch * seq rows. */
nc_status decision_reserve(decision_model *m, int batch, int seq, nc_error *err);

/* y[n, out] = x[n, in] W^T + b on the model's pool. */
void decision_linear_rows(const decision_model *m, const decision_linear *l, const float *x, int n,
                          float *y);

#endif
