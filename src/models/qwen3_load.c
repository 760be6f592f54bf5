/* Loading a Qwen3 (or Llama) folder into a qwen3_model: config (read by
 * its family's reader, models/family.h), safetensors (single or
 * sharded), every tensor found by its HF name and checked (dtype F32/F16/
 * BF16, or U8 Q8/Q4 blocks from `nectar quantize`; shape from the config,
 * alignment), matrices left in the mmap, norm
 * vectors widened to fp32, and the workspace and thread pool made once.
 * Also the per-sequence state (the KV cache). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/half.h"
#include "cpu/cpu_attention.h"
#include "cpu/cpu_ops.h"
#include "cpu/cpu_quant.h"
#include "models/family.h"
#include "models/hf_tensors.h"
#include "models/qwen3_impl.h"

const qwen3_config *qwen3_model_config(const qwen3_model *m) {
    return &m->cfg;
}
int qwen3_model_threads(const qwen3_model *m) {
    return nc_pool_threads(m->b.pool);
}
void qwen3_model_set_kv_f16(qwen3_model *m, int on) {
    m->b.kv_f16 = on != 0;
}
const dec_model *qwen3_model_base(const qwen3_model *m) {
    return &m->b;
}

const char *qwen3_model_dtype(const qwen3_model *m) {
    return m->cfg.num_hidden_layers ? cpu_wtype_name(m->layers[0].q.type) : "?";
}

size_t qwen3_model_weight_bytes_per_token(const qwen3_model *m) {
    size_t b = cpu_mat_bytes(&m->lm_head);
    for (int l = 0; l < m->cfg.num_hidden_layers; l++) {
        const qwen3_layer *L = &m->layers[l];
        b += cpu_mat_bytes(&L->q) + cpu_mat_bytes(&L->k) + cpu_mat_bytes(&L->v) +
             cpu_mat_bytes(&L->o) + cpu_mat_bytes(&L->gate) + cpu_mat_bytes(&L->up) +
             cpu_mat_bytes(&L->down);
    }
    return b;
}

static nc_status load_mat(const qwen3_model *m, const char *name, int rows, int cols, cpu_mat *out,
                          nc_error *err) {
    return dec_model_load_mat(&m->b, name, rows, cols, out, err);
}

/* Norm weights are small: widen them to fp32 once, into *dst; Gemma's
 * are stored as w and scale by 1 + w, added here once (in fp32, as HF's
 * 1.0 + weight.float()). */
static nc_status load_norm(const qwen3_model *m, const char *name, int n, float **dst,
                           const float **out, nc_error *err) {
    float *first = *dst;
    NC_TRY(hft_load_vec(m->b.weights, m->b.dir, name, 1, (const int64_t[]){n}, dst, out, err));
    if (m->cfg.norm_plus_one)
        for (int i = 0; i < n; i++)
            first[i] = 1.0f + first[i];
    return NC_OK;
}

/* Layer l's matrix `name` (a checkpoint's "<prefix>layers.<l>.<name>"),
 * from the safetensors or the model's source. */
static nc_status layer_mat(qwen3_model *m, int l, const char *name, int rows, int cols,
                           cpu_mat *out, nc_error *err) {
    if (m->src) return m->src->mat(m->src->user, l, name, rows, cols, out, err);
    char n[160];
    snprintf(n, sizeof n, "%slayers.%d.%s", m->prefix, l, name);
    return load_mat(m, n, rows, cols, out, err);
}

/* The same for a norm vector of n, widened to fp32 into *dst (a source
 * gives it as the model multiplies by it). */
static nc_status layer_norm(qwen3_model *m, int l, const char *name, int n, float **dst,
                            const float **out, nc_error *err) {
    if (!m->src) {
        char nm[160];
        snprintf(nm, sizeof nm, "%slayers.%d.%s", m->prefix, l, name);
        return load_norm(m, nm, n, dst, out, err);
    }
    cpu_mat v;
    NC_TRY(m->src->mat(m->src->user, l, name, n, 1, &v, err));
    m->b.kern->row_to_f32[v.type](v.data, *dst, n);
    *out = *dst;
    *dst += n;
    return NC_OK;
}

static nc_status load_layer(qwen3_model *m, int l, float **norm_dst, nc_error *err) {
    const qwen3_config *c = &m->cfg;
    qwen3_layer *L = &m->layers[l];
    int d = c->hidden_size, qd = c->num_attention_heads * c->head_dim,
        kvd = c->num_key_value_heads * c->head_dim, ff = c->intermediate_size;
    NC_TRY(layer_norm(m, l, "input_layernorm.weight", d, norm_dst, &L->attn_norm, err));
    if (c->sandwich_norm) { /* Gemma: post_attention_layernorm follows the attention */
        NC_TRY(layer_norm(m, l, "post_attention_layernorm.weight", d, norm_dst, &L->post_attn_norm,
                          err));
        NC_TRY(layer_norm(m, l, "pre_feedforward_layernorm.weight", d, norm_dst, &L->mlp_norm,
                          err));
        NC_TRY(layer_norm(m, l, "post_feedforward_layernorm.weight", d, norm_dst,
                          &L->post_mlp_norm, err));
    } else {
        NC_TRY(layer_norm(m, l, "post_attention_layernorm.weight", d, norm_dst, &L->mlp_norm, err));
    }
    if (c->qk_norm) { /* Qwen3's; Llama has none (q_norm, k_norm stay NULL) */
        NC_TRY(layer_norm(m, l, "self_attn.q_norm.weight", c->head_dim, norm_dst, &L->q_norm, err));
        NC_TRY(layer_norm(m, l, "self_attn.k_norm.weight", c->head_dim, norm_dst, &L->k_norm, err));
    }
    NC_TRY(layer_mat(m, l, "self_attn.q_proj.weight", qd, d, &L->q, err));
    NC_TRY(layer_mat(m, l, "self_attn.k_proj.weight", kvd, d, &L->k, err));
    NC_TRY(layer_mat(m, l, "self_attn.v_proj.weight", kvd, d, &L->v, err));
    NC_TRY(layer_mat(m, l, "self_attn.o_proj.weight", d, qd, &L->o, err));
    NC_TRY(layer_mat(m, l, "mlp.gate_proj.weight", ff, d, &L->gate, err));
    NC_TRY(layer_mat(m, l, "mlp.up_proj.weight", ff, d, &L->up, err));
    NC_TRY(layer_mat(m, l, "mlp.down_proj.weight", d, ff, &L->down, err));
    return NC_OK;
}

/* Where the decoder's tensors are: "model." ; in the hub's multimodal
 * Gemma 3 checkpoints "language_model.model." (what transformers writes
 * and the hub holds) or "model.language_model." (the module names). */
void qwen3_tensor_prefix(const struct hf_weights *w, const qwen3_config *c, char *out, size_t cap) {
    static const char *const multimodal[] = {"language_model.model.", "model.language_model."};
    snprintf(out, cap, "model.");
    for (int i = 0; c->multimodal && i < 2; i++) {
        char name[96];
        snprintf(name, sizeof name, "%sembed_tokens.weight", multimodal[i]);
        if (hf_weights_find(w, name, NULL)) {
            snprintf(out, cap, "%s", multimodal[i]);
            return;
        }
    }
}

/* HF multiplies the embedding by sqrt(hidden) cast to the weights' dtype:
 * bf16 (or fp16) checkpoints round it there. Q8/Q4 copies were made from
 * Gemma's bf16 release, so they round as bf16. */
static float embed_scale_of(float scale, cpu_wtype t) {
    if (!scale || t == CPU_W_F32) return scale;
    if (t == CPU_W_F16) return nc_fp16_to_f32(nc_f32_to_fp16(scale));
    return nc_bf16_to_f32(nc_f32_to_bf16(scale));
}

static nc_status load_weights(qwen3_model *m, nc_error *err) {
    const qwen3_config *c = &m->cfg;
    int nl = c->num_hidden_layers;
    m->layers = calloc((size_t)nl, sizeof *m->layers);
    size_t per_layer =
        (c->sandwich_norm ? 4 : 2) * (size_t)c->hidden_size + 2 * (size_t)c->head_dim;
    size_t n_norm = (size_t)nl * per_layer + (size_t)c->hidden_size;
    size_t half = (size_t)c->head_dim / 2;
    m->norms = nc_alloc_aligned(n_norm * sizeof(float));
    m->inv_freq = nc_alloc_aligned(half * sizeof(float));
    m->inv_freq_local = c->sliding_window ? nc_alloc_aligned(half * sizeof(float)) : NULL;
    if (!m->layers || !m->norms || !m->inv_freq || (c->sliding_window && !m->inv_freq_local))
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", m->b.dir);
    cpu_rope_inv_freq(m->inv_freq, c->head_dim, c->rope_theta);
    rope_scaling_apply(m->inv_freq, c->head_dim / 2, &c->rope_scaling);
    if (m->inv_freq_local) cpu_rope_inv_freq(m->inv_freq_local, c->head_dim, c->rope_local_theta);
    m->attn_scale =
        1.0f / sqrtf(c->query_pre_attn_scalar > 0 ? c->query_pre_attn_scalar : (float)c->head_dim);
    float *dst = m->norms;
    if (m->src) { /* the marked layers only */
        for (int l = 0; l < nl; l++)
            if (m->src_layers[l]) NC_TRY(load_layer(m, l, &dst, err));
        return NC_OK;
    }
    qwen3_tensor_prefix(m->b.weights, c, m->prefix, sizeof m->prefix);
    char name[96];
    snprintf(name, sizeof name, "%sembed_tokens.weight", m->prefix);
    NC_TRY(load_mat(m, name, c->vocab_size, c->hidden_size, &m->embed, err));
    m->embed_scale = embed_scale_of(c->embed_scale, m->embed.type);
    for (int l = 0; l < nl; l++)
        NC_TRY(load_layer(m, l, &dst, err));
    snprintf(name, sizeof name, "%snorm.weight", m->prefix);
    NC_TRY(load_norm(m, name, c->hidden_size, &dst, &m->final_norm, err));
    /* lm_head.weight when stored (Qwen3-0.6B stores it although tied), else
     * the tied embedding. */
    const char *head =
        c->multimodal && hf_weights_find(m->b.weights, "language_model.lm_head.weight", NULL)
            ? "language_model.lm_head.weight"
            : "lm_head.weight";
    if (hf_weights_find(m->b.weights, head, NULL) || !c->tie_word_embeddings)
        return load_mat(m, head, c->vocab_size, c->hidden_size, &m->lm_head, err);
    m->lm_head = m->embed;
    return NC_OK;
}

/* The batch workspace: fixed size, allocated once per model. */
static nc_status workspace_new(qwen3_model *m, nc_error *err) {
    const qwen3_config *c = &m->cfg;
    qwen3_workspace *w = &m->ws;
    size_t b = QWEN3_MAX_BATCH, d = (size_t)c->hidden_size, ff = (size_t)c->intermediate_size;
    size_t qd = (size_t)c->num_attention_heads * c->head_dim;
    size_t kvd = (size_t)c->num_key_value_heads * c->head_dim;
    w->x = nc_alloc_aligned(b * d * sizeof(float));
    w->xb = nc_alloc_aligned(b * d * sizeof(float));
    w->q = nc_alloc_aligned(b * qd * sizeof(float));
    w->k = nc_alloc_aligned(b * kvd * sizeof(float));
    w->v = nc_alloc_aligned(b * kvd * sizeof(float));
    w->att = nc_alloc_aligned(b * qd * sizeof(float));
    w->hb = nc_alloc_aligned(b * ff * sizeof(float));
    w->hb2 = nc_alloc_aligned(b * ff * sizeof(float));
    w->rope_cos = nc_alloc_aligned(b * (size_t)c->head_dim / 2 * sizeof(float));
    w->rope_sin = nc_alloc_aligned(b * (size_t)c->head_dim / 2 * sizeof(float));
    if (c->sliding_window) {
        w->rope_cos_local = nc_alloc_aligned(b * (size_t)c->head_dim / 2 * sizeof(float));
        w->rope_sin_local = nc_alloc_aligned(b * (size_t)c->head_dim / 2 * sizeof(float));
        w->first_key = calloc(b, sizeof *w->first_key);
        if (!w->rope_cos_local || !w->rope_sin_local || !w->first_key)
            return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the batch workspace",
                           m->b.dir);
    }
    size_t group = (size_t)(c->num_attention_heads / c->num_key_value_heads);
    w->scores = nc_alloc_aligned((size_t)nc_pool_threads(m->b.pool) * CPU_ATTENTION_BLOCK * group *
                                 (size_t)c->max_position_embeddings * sizeof(float));
    w->logits = nc_alloc_aligned((size_t)QWEN3_LOGIT_ROWS * (size_t)c->vocab_size * sizeof(float));
    int widest = (int)(ff > qd ? ff : qd) > (int)d ? (int)(ff > qd ? ff : qd) : (int)d;
    w->row_state = calloc(b, sizeof *w->row_state);
    if (!w->x || !w->xb || !w->q || !w->k || !w->v || !w->att || !w->hb || !w->hb2 ||
        !w->rope_cos || !w->rope_sin || !w->scores || !w->logits || !w->row_state)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the batch workspace", m->b.dir);
    return dec_rows_ws_new(&m->b, (int)b, widest, err);
}

static void workspace_free(qwen3_workspace *w) {
    float *bufs[] = {w->x,
                     w->xb,
                     w->q,
                     w->k,
                     w->v,
                     w->att,
                     w->hb,
                     w->hb2,
                     w->rope_cos,
                     w->rope_sin,
                     w->scores,
                     w->logits,
                     w->rope_cos_local,
                     w->rope_sin_local};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        nc_free_aligned(bufs[i]);
    free(w->row_state);
    free(w->first_key);
}

/* dec_model_load's steps */
static nc_status config_step(void *m, nc_error *err) {
    qwen3_model *q = m;
    return model_family_qwen3_config_load(q->b.dir, &q->cfg, err);
}
static nc_status weights_step(void *m, nc_error *err) {
    return load_weights(m, err);
}
static nc_status workspace_step(void *m, nc_error *err) {
    return workspace_new(m, err);
}

nc_status qwen3_load(const char *dir, const qwen3_load_options *opt, qwen3_model **out,
                     nc_error *err) {
    *out = NULL;
    qwen3_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
    static const dec_load_steps steps = {config_step, weights_step, workspace_step, 0};
    nc_status st = dec_model_load(&m->b, m, dir, opt ? opt->n_threads : 0, &steps, err);
    if (st != NC_OK) {
        qwen3_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

nc_status qwen3_load_layers(const char *config_dir, const qwen3_tensor_source *src,
                            const unsigned char *layers, int n_threads, qwen3_model **out,
                            nc_error *err) {
    *out = NULL;
    qwen3_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", config_dir);
    m->src = src;
    m->src_layers = layers;
    static const dec_load_steps steps = {config_step, weights_step, workspace_step, 1};
    nc_status st = dec_model_load(&m->b, m, config_dir, n_threads, &steps, err);
    m->src_layers = NULL; /* the caller's, read during the load only */
    if (st != NC_OK) {
        qwen3_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

void qwen3_free(qwen3_model *m) {
    if (!m) return;
    workspace_free(&m->ws);
    nc_free_aligned(m->norms);
    nc_free_aligned(m->inv_freq);
    nc_free_aligned(m->inv_freq_local);
    free(m->layers);
    dec_model_free(&m->b);
    free(m);
}

/* ---- per-sequence state ----------------------------------------------- */

nc_status qwen3_state_new(const qwen3_model *m, int ctx, qwen3_state **out, nc_error *err) {
    return qwen3_state_new_layers(m, ctx, NULL, out, err);
}

nc_status qwen3_state_new_layers(const qwen3_model *m, int ctx, const unsigned char *layers,
                                 qwen3_state **out, nc_error *err) {
    *out = NULL;
    const qwen3_config *c = &m->cfg;
    if (ctx <= 0 || ctx > c->max_position_embeddings) ctx = c->max_position_embeddings;
    qwen3_state *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "KV cache: out of memory");
    s->m = m;
    s->ctx = ctx;
    s->batch = QWEN3_MAX_BATCH;
    int kept = c->num_hidden_layers;
    if (layers) { /* a layer state: caches for the marked layers only */
        s->slot = malloc((size_t)c->num_hidden_layers * sizeof *s->slot);
        if (!s->slot) {
            free(s);
            return nc_fail(err, NC_ERR_NOMEM, "KV cache: out of memory");
        }
        kept = 0;
        for (int l = 0; l < c->num_hidden_layers; l++)
            s->slot[l] = layers[l] ? kept++ : -1;
    }
    size_t kvd = (size_t)c->num_key_value_heads * c->head_dim;
    int ovf = 0;
    size_t cache_bytes =
        nc_mul_size(nc_mul_size((size_t)kept * (size_t)ctx, kvd, &ovf),
                    m->b.kv_f16 ? sizeof(nc_fp16) : sizeof(float), &ovf);
    if (!ovf) {
        /* calloc, not nc_alloc_aligned: large callocs are fresh zero pages
         * that become resident only when a position is written, so a 4096
         * context costs memory only as it fills. (The kernels do unaligned
         * loads; 16-byte alignment is enough.) */
        s->k_cache = calloc(1, cache_bytes + 1);
        s->v_cache = calloc(1, cache_bytes + 1);
    }
    if (!s->k_cache || !s->v_cache) {
        qwen3_state_free(s);
        return nc_fail(err, NC_ERR_NOMEM,
                       "KV cache: out of memory for a context of %d tokens (%zu MiB)", ctx,
                       ovf ? (size_t)-1 : 2 * cache_bytes >> 20);
    }
    *out = s;
    return NC_OK;
}

void qwen3_state_free(qwen3_state *s) {
    if (!s) return;
    free(s->k_cache);
    free(s->v_cache);
    free(s->slot);
    free(s);
}

int qwen3_state_pos(const qwen3_state *s) {
    return s->pos;
}
int qwen3_state_ctx(const qwen3_state *s) {
    return s->ctx;
}
void qwen3_state_set_batch(qwen3_state *s, int max_rows) {
    s->batch = max_rows < 1 ? 1 : max_rows > QWEN3_MAX_BATCH ? QWEN3_MAX_BATCH : max_rows;
}
void qwen3_state_truncate(qwen3_state *s, int n_keep) {
    if (n_keep < 0) n_keep = 0;
    if (n_keep < s->pos) s->pos = n_keep;
}
