/* Loading a Qwen3.5 folder into a qwen35_model: config, safetensors (single
 * or sharded), every decoder tensor found by its HF name under
 * model.language_model. (hub layout) or model. (text-only layout) and
 * checked (dtype F32/F16/BF16 or U8 Q8/Q4 blocks from `nectar quantize`,
 * shape from the config). Matrices stay in the mmap; the vision tower
 * (model.visual.*) and the multi-token-prediction head (mtp.*) are never
 * read. Small vectors are widened to fp32 once: the (1 + w) RMSNorm weights
 * are stored as 1 + w, the decay as -exp(A_log), the conv weight transposed
 * for the row-wise kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "cpu/cpu_attention.h"
#include "cpu/cpu_delta.h"
#include "cpu/cpu_ops.h"
#include "cpu/cpu_quant.h"
#include "models/hf_tensors.h"
#include "models/qwen35_impl.h"

const qwen35_config *qwen35_model_config(const qwen35_model *m) {
    return &m->cfg;
}
void qwen35_model_set_kv_f16(qwen35_model *m, int on) {
    m->b.kv_f16 = on != 0;
}
const dec_model *qwen35_model_base(const qwen35_model *m) {
    return &m->b;
}
const char *qwen35_model_dtype(const qwen35_model *m) {
    return cpu_wtype_name(m->layers[0].gate.type);
}

size_t qwen35_conv_dim(const qwen35_config *c) {
    return 2 * (size_t)c->linear_num_key_heads * c->linear_key_head_dim +
           (size_t)c->linear_num_value_heads * c->linear_value_head_dim;
}
size_t qwen35_conv_floats(const qwen35_config *c) {
    return (size_t)(c->linear_conv_kernel_dim - 1) * qwen35_conv_dim(c);
}
size_t qwen35_rec_floats(const qwen35_config *c) {
    return (size_t)c->linear_num_value_heads * c->linear_key_head_dim * c->linear_value_head_dim;
}

size_t qwen35_model_weight_bytes_per_token(const qwen35_model *m) {
    size_t b = cpu_mat_bytes(&m->lm_head);
    for (int l = 0; l < m->cfg.num_hidden_layers; l++) {
        const qwen35_layer *L = &m->layers[l];
        const cpu_mat *mats[] = {&L->q, &L->k, &L->v,   &L->o,    &L->qkv, &L->z,
                                 &L->b, &L->a, &L->out, &L->gate, &L->up,  &L->down};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
            if (mats[i]->data) b += cpu_mat_bytes(mats[i]);
    }
    return b;
}

static nc_status load_mat(const qwen35_model *m, const char *name, int rows, int cols, cpu_mat *out,
                          nc_error *err) {
    return dec_model_load_mat(&m->b, name, rows, cols, out, err);
}

static nc_status load_vec(const qwen35_model *m, const char *name, int ndim, const int64_t *shape,
                          float **dst, const float **out, nc_error *err) {
    return hft_load_vec(m->b.weights, m->b.dir, name, ndim, shape, dst, out, err);
}

/* Qwen3_5RMSNorm computes x_hat * (1 + w) in fp32: stored as 1 + w. */
static nc_status load_norm1p(const qwen35_model *m, const char *name, int n, float **dst,
                             const float **out, nc_error *err) {
    NC_TRY(load_vec(m, name, 1, (int64_t[]){n}, dst, out, err));
    float *w = *dst - n;
    for (int i = 0; i < n; i++)
        w[i] = 1.0f + w[i];
    return NC_OK;
}

static const char *prefix(const qwen35_model *m) {
    return m->cfg.is_vl ? "model.language_model." : "model.";
}

static nc_status load_full_attn(qwen35_model *m, qwen35_layer *L, int l, float **dst,
                                nc_error *err) {
    const qwen35_config *c = &m->cfg;
    int d = c->hidden_size, hd = c->head_dim, qd = c->num_attention_heads * hd,
        kvd = c->num_key_value_heads * hd;
    char n[256];
#define NAME(s) (snprintf(n, sizeof n, "%slayers.%d.self_attn.%s", prefix(m), l, s), n)
    NC_TRY(load_norm1p(m, NAME("q_norm.weight"), hd, dst, &L->q_norm, err));
    NC_TRY(load_norm1p(m, NAME("k_norm.weight"), hd, dst, &L->k_norm, err));
    NC_TRY(load_mat(m, NAME("q_proj.weight"), 2 * qd, d, &L->q, err));
    NC_TRY(load_mat(m, NAME("k_proj.weight"), kvd, d, &L->k, err));
    NC_TRY(load_mat(m, NAME("v_proj.weight"), kvd, d, &L->v, err));
    NC_TRY(load_mat(m, NAME("o_proj.weight"), d, qd, &L->o, err));
#undef NAME
    return NC_OK;
}

static nc_status load_linear_attn(qwen35_model *m, qwen35_layer *L, int l, float **dst,
                                  nc_error *err) {
    const qwen35_config *c = &m->cfg;
    int d = c->hidden_size, nv = c->linear_num_value_heads, K = c->linear_conv_kernel_dim;
    int vd = nv * c->linear_value_head_dim, cd = (int)qwen35_conv_dim(c);
    char n[256];
#define NAME(s) (snprintf(n, sizeof n, "%slayers.%d.linear_attn.%s", prefix(m), l, s), n)
    NC_TRY(load_mat(m, NAME("in_proj_qkv.weight"), cd, d, &L->qkv, err));
    NC_TRY(load_mat(m, NAME("in_proj_z.weight"), vd, d, &L->z, err));
    NC_TRY(load_mat(m, NAME("in_proj_b.weight"), nv, d, &L->b, err));
    NC_TRY(load_mat(m, NAME("in_proj_a.weight"), nv, d, &L->a, err));
    NC_TRY(load_mat(m, NAME("out_proj.weight"), d, vd, &L->out, err));
    const float *A_log, *conv;
    NC_TRY(load_vec(m, NAME("A_log"), 1, (int64_t[]){nv}, dst, &A_log, err));
    for (int h = 0; h < nv; h++)
        (*dst - nv)[h] = -expf(A_log[h]);
    L->neg_A = A_log;
    NC_TRY(load_vec(m, NAME("dt_bias"), 1, (int64_t[]){nv}, dst, &L->dt_bias, err));
    NC_TRY(load_vec(m, NAME("norm.weight"), 1, (int64_t[]){c->linear_value_head_dim}, dst,
                    &L->gnorm, err));
    /* [conv_dim, 1, K] -> [K][conv_dim]: read into the slot after it, then
     * transpose into place */
    float *wt = *dst;
    NC_TRY(load_vec(m, NAME("conv1d.weight"), 3, (int64_t[]){cd, 1, K}, dst, &conv, err));
#undef NAME
    float *tmp = malloc((size_t)cd * K * sizeof(float));
    if (!tmp) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", m->b.dir);
    memcpy(tmp, conv, (size_t)cd * K * sizeof(float));
    for (int ch = 0; ch < cd; ch++)
        for (int j = 0; j < K; j++)
            wt[(size_t)j * cd + ch] = tmp[(size_t)ch * K + j];
    free(tmp);
    L->conv_w = wt;
    return NC_OK;
}

static nc_status load_layer(qwen35_model *m, int l, int *n_full, float **dst, nc_error *err) {
    const qwen35_config *c = &m->cfg;
    qwen35_layer *L = &m->layers[l];
    int d = c->hidden_size, ff = c->intermediate_size;
    L->is_full = c->is_full[l];
    L->slot = L->is_full ? (*n_full)++ : l - *n_full;
    char n[256];
#define NAME(s) (snprintf(n, sizeof n, "%slayers.%d.%s", prefix(m), l, s), n)
    NC_TRY(load_norm1p(m, NAME("input_layernorm.weight"), d, dst, &L->attn_norm, err));
    NC_TRY(load_norm1p(m, NAME("post_attention_layernorm.weight"), d, dst, &L->mlp_norm, err));
    NC_TRY(load_mat(m, NAME("mlp.gate_proj.weight"), ff, d, &L->gate, err));
    NC_TRY(load_mat(m, NAME("mlp.up_proj.weight"), ff, d, &L->up, err));
    NC_TRY(load_mat(m, NAME("mlp.down_proj.weight"), d, ff, &L->down, err));
    if (!L->is_full && !hf_weights_find(m->b.weights, NAME("linear_attn.in_proj_qkv.weight"), NULL))
        return nc_fail(err, NC_ERR_NOT_FOUND,
                       "%s: layer %d is a linear-attention layer (layer_types) but tensor '%s' is "
                       "missing: not a complete Qwen3.5 checkpoint",
                       m->b.dir, l, n);
#undef NAME
    return L->is_full ? load_full_attn(m, L, l, dst, err) : load_linear_attn(m, L, l, dst, err);
}

static nc_status load_weights(qwen35_model *m, nc_error *err) {
    const qwen35_config *c = &m->cfg;
    int nl = c->num_hidden_layers;
    m->n_linear = nl - c->n_full;
    size_t per_full = 2 * (size_t)c->head_dim;
    size_t per_lin = 3 * (size_t)c->linear_num_value_heads + (size_t)c->linear_value_head_dim +
                     (size_t)c->linear_conv_kernel_dim * qwen35_conv_dim(c);
    size_t n_small = (size_t)nl * 2 * c->hidden_size + (size_t)c->n_full * per_full +
                     (size_t)m->n_linear * per_lin + c->hidden_size;
    m->layers = calloc((size_t)nl, sizeof *m->layers);
    m->small = nc_alloc_aligned(n_small * sizeof(float));
    m->inv_freq = nc_alloc_aligned((size_t)c->rotary_dim / 2 * sizeof(float));
    if (!m->layers || !m->small || !m->inv_freq)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", m->b.dir);
    cpu_rope_inv_freq(m->inv_freq, c->rotary_dim, c->rope_theta);
    char n[256];
    snprintf(n, sizeof n, "%sembed_tokens.weight", prefix(m));
    if (c->is_vl && !hf_weights_find(m->b.weights, n, NULL))
        return nc_fail(err, NC_ERR_NOT_FOUND,
                       "%s: no language-model weights ('%s' not found): a vision-only or "
                       "incomplete Qwen3.5 checkpoint",
                       m->b.dir, n);
    NC_TRY(load_mat(m, n, c->vocab_size, c->hidden_size, &m->embed, err));
    float *dst = m->small;
    int n_full = 0;
    for (int l = 0; l < nl; l++)
        NC_TRY(load_layer(m, l, &n_full, &dst, err));
    snprintf(n, sizeof n, "%snorm.weight", prefix(m));
    NC_TRY(load_norm1p(m, n, c->hidden_size, &dst, &m->final_norm, err));
    /* lm_head.weight when stored, else the tied embedding */
    if (hf_weights_find(m->b.weights, "lm_head.weight", NULL) || !c->tie_word_embeddings)
        return load_mat(m, "lm_head.weight", c->vocab_size, c->hidden_size, &m->lm_head, err);
    m->lm_head = m->embed;
    return NC_OK;
}

static nc_status workspace_new(qwen35_model *m, nc_error *err) {
    const qwen35_config *c = &m->cfg;
    qwen35_workspace *w = &m->ws;
    size_t b = QWEN35_MAX_BATCH, d = (size_t)c->hidden_size, ff = (size_t)c->intermediate_size;
    size_t qd = (size_t)c->num_attention_heads * c->head_dim;
    size_t kvd = (size_t)c->num_key_value_heads * c->head_dim;
    size_t cd = qwen35_conv_dim(c),
           vd = (size_t)c->linear_num_value_heads * c->linear_value_head_dim;
    size_t big = 2 * qd > cd ? 2 * qd : cd;
    int threads = nc_pool_threads(m->b.pool);
    float **bufs[] = {&w->x, &w->xb,   &w->big, &w->q,  &w->k,   &w->v,        &w->gate,    &w->att,
                      &w->z, &w->core, &w->ba,  &w->hb, &w->hb2, &w->rope_cos, &w->rope_sin};
    size_t sizes[] = {d,
                      d,
                      big,
                      qd,
                      kvd,
                      kvd,
                      qd,
                      qd,
                      vd,
                      vd,
                      2 * (size_t)c->linear_num_value_heads,
                      ff,
                      ff,
                      (size_t)c->rotary_dim / 2,
                      (size_t)c->rotary_dim / 2};
    int ok = 1;
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ok &= (*bufs[i] = nc_alloc_aligned(b * sizes[i] * sizeof(float))) != NULL;
    size_t group = (size_t)(c->num_attention_heads / c->num_key_value_heads);
    w->scores = nc_alloc_aligned((size_t)threads * CPU_ATTENTION_BLOCK * group *
                                 (size_t)c->max_position_embeddings * sizeof(float));
    w->logits = nc_alloc_aligned((size_t)QWEN35_LOGIT_ROWS * (size_t)c->vocab_size * sizeof(float));
    w->delta_floats =
        cpu_delta_scratch_floats(QWEN35_CHUNK, c->linear_key_head_dim, c->linear_value_head_dim);
    w->delta_scratch = nc_alloc_aligned((size_t)threads * w->delta_floats * sizeof(float));
    size_t widest = d;
    size_t ins[] = {ff, qd, vd};
    for (int i = 0; i < 3; i++)
        widest = ins[i] > widest ? ins[i] : widest;
    w->row_state = calloc(b, sizeof *w->row_state);
    if (!ok || !w->scores || !w->logits || !w->delta_scratch || !w->row_state)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the batch workspace", m->b.dir);
    return dec_rows_ws_new(&m->b, (int)b, (int)widest, err);
}

static void workspace_free(qwen35_workspace *w) {
    float *bufs[] = {w->x,    w->xb,       w->big,      w->q,      w->k,      w->v,
                     w->gate, w->att,      w->z,        w->core,   w->ba,     w->hb,
                     w->hb2,  w->rope_cos, w->rope_sin, w->scores, w->logits, w->delta_scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        nc_free_aligned(bufs[i]);
    free(w->row_state);
}

/* dec_model_load's steps */
static nc_status config_step(void *m, nc_error *err) {
    qwen35_model *q = m;
    q->delta_gemm = cpu_delta_gemm_for(q->b.kern);
    return qwen35_config_load(q->b.dir, &q->cfg, err);
}
static nc_status weights_step(void *m, nc_error *err) {
    return load_weights(m, err);
}
static nc_status workspace_step(void *m, nc_error *err) {
    return workspace_new(m, err);
}

nc_status qwen35_load(const char *dir, int n_threads, qwen35_model **out, nc_error *err) {
    *out = NULL;
    qwen35_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
    static const dec_load_steps steps = {config_step, weights_step, workspace_step, 0};
    nc_status st = dec_model_load(&m->b, m, dir, n_threads, &steps, err);
    if (st != NC_OK) {
        qwen35_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

void qwen35_free(qwen35_model *m) {
    if (!m) return;
    workspace_free(&m->ws);
    nc_free_aligned(m->small);
    nc_free_aligned(m->inv_freq);
    free(m->layers);
    dec_model_free(&m->b);
    free(m);
}
