/* Qwen3 forward pass on the CPU, as transformers' modeling_qwen3.py computes
 * it: pre-norm decoder layers with QK-norm before rotate-half RoPE, grouped
 * query attention and a SiLU-gated MLP. Weights stay in the mmap in their
 * stored dtype (the kernels widen them in registers); only the small norm
 * vectors are copied to fp32. A prompt goes through each matrix as one batch
 * of rows; the KV cache is fp32, [layer][position][kv_heads * head_dim]. */
#include "models/qwen3.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/pool.h"
#include "cpu/cpu_attention.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_ops.h"
#include "io/hf_weights.h"

typedef struct qwen3_layer {
    const float *attn_norm, *q_norm, *k_norm, *mlp_norm; /* fp32 copies */
    cpu_mat q, k, v, o, gate, up, down;
} qwen3_layer;

struct qwen3_model {
    qwen3_config cfg;
    char *dir;
    hf_weights *weights;
    nc_pool *pool;
    const cpu_kernels *kern;
    qwen3_layer *layers;
    cpu_mat embed, lm_head;
    const float *final_norm;
    float *norms;    /* one block holding every fp32 norm vector */
    float *inv_freq; /* RoPE, head_dim / 2 */
};

struct qwen3_state {
    const qwen3_model *m;
    int ctx, pos;
    int batch_cap, batch; /* rows the scratch buffers hold; rows per chunk */
    float *k_cache, *v_cache;
    /* scratch, [batch, width] each */
    float *x, *xb, *q, *att, *hb, *hb2, *rope_cos, *rope_sin;
    float *scores; /* [threads, ctx] */
};

/* ---- loading ---------------------------------------------------------- */

const qwen3_config *qwen3_model_config(const qwen3_model *m) { return &m->cfg; }
int qwen3_model_threads(const qwen3_model *m) { return nc_pool_threads(m->pool); }

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

static const char *shape_str(char *buf, size_t cap, const int64_t *shape, int ndim) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < ndim && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

/* Finds a tensor and checks its dtype (F32/F16/BF16), shape and alignment. */
static nc_status find_tensor(const qwen3_model *m, const char *name, int ndim, int64_t d0,
                             int64_t d1, const st_tensor **out, nc_error *err) {
    const char *file = NULL;
    const st_tensor *t = hf_weights_find(m->weights, name, &file);
    if (!t) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: tensor '%s' not found", m->dir, name);
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: tensor '%s' has dtype %s; expected F32, F16 or BF16", file, name,
                       st_dtype_name(t->dtype));
    int64_t want[2] = {d0, d1};
    if (t->ndim != ndim || t->shape[0] != d0 || (ndim == 2 && t->shape[1] != d1)) {
        char got[128], exp[64];
        return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s' has shape %s; the config needs %s",
                       file, name, shape_str(got, sizeof got, t->shape, t->ndim),
                       shape_str(exp, sizeof exp, want, ndim));
    }
    if ((uintptr_t)t->data % st_dtype_size(t->dtype))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: tensor '%s' is not aligned to its %zu-byte elements", file, name,
                       st_dtype_size(t->dtype));
    *out = t;
    return NC_OK;
}

static cpu_wtype wtype_of(st_dtype d) {
    return d == ST_F32 ? CPU_W_F32 : d == ST_F16 ? CPU_W_F16 : CPU_W_BF16;
}

static nc_status load_mat(const qwen3_model *m, const char *name, int rows, int cols,
                          cpu_mat *out, nc_error *err) {
    const st_tensor *t;
    NC_TRY(find_tensor(m, name, 2, rows, cols, &t, err));
    out->type = wtype_of(t->dtype);
    out->data = t->data;
    out->rows = rows;
    out->cols = cols;
    return NC_OK;
}

/* Norm weights are small: widen them to fp32 once, into *dst. */
static nc_status load_norm(const qwen3_model *m, const char *name, int n, float **dst,
                           const float **out, nc_error *err) {
    const st_tensor *t;
    NC_TRY(find_tensor(m, name, 1, n, 0, &t, err));
    cpu_kernels_scalar.row_to_f32[wtype_of(t->dtype)](t->data, *dst, n);
    *out = *dst;
    *dst += n;
    return NC_OK;
}

static nc_status load_layer(qwen3_model *m, int l, float **norm_dst, nc_error *err) {
    const qwen3_config *c = &m->cfg;
    qwen3_layer *L = &m->layers[l];
    int d = c->hidden_size, qd = c->num_attention_heads * c->head_dim,
        kvd = c->num_key_value_heads * c->head_dim, ff = c->intermediate_size;
    char n[160];
#define NAME(suffix) (snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), n)
    NC_TRY(load_norm(m, NAME("input_layernorm.weight"), d, norm_dst, &L->attn_norm, err));
    NC_TRY(load_norm(m, NAME("post_attention_layernorm.weight"), d, norm_dst, &L->mlp_norm, err));
    NC_TRY(load_norm(m, NAME("self_attn.q_norm.weight"), c->head_dim, norm_dst, &L->q_norm, err));
    NC_TRY(load_norm(m, NAME("self_attn.k_norm.weight"), c->head_dim, norm_dst, &L->k_norm, err));
    NC_TRY(load_mat(m, NAME("self_attn.q_proj.weight"), qd, d, &L->q, err));
    NC_TRY(load_mat(m, NAME("self_attn.k_proj.weight"), kvd, d, &L->k, err));
    NC_TRY(load_mat(m, NAME("self_attn.v_proj.weight"), kvd, d, &L->v, err));
    NC_TRY(load_mat(m, NAME("self_attn.o_proj.weight"), d, qd, &L->o, err));
    NC_TRY(load_mat(m, NAME("mlp.gate_proj.weight"), ff, d, &L->gate, err));
    NC_TRY(load_mat(m, NAME("mlp.up_proj.weight"), ff, d, &L->up, err));
    NC_TRY(load_mat(m, NAME("mlp.down_proj.weight"), d, ff, &L->down, err));
#undef NAME
    return NC_OK;
}

static nc_status load_weights(qwen3_model *m, nc_error *err) {
    const qwen3_config *c = &m->cfg;
    int nl = c->num_hidden_layers;
    m->layers = calloc((size_t)nl, sizeof *m->layers);
    size_t n_norm = (size_t)nl * (2 * (size_t)c->hidden_size + 2 * (size_t)c->head_dim) +
                    (size_t)c->hidden_size;
    m->norms = nc_alloc_aligned(n_norm * sizeof(float));
    m->inv_freq = nc_alloc_aligned((size_t)c->head_dim / 2 * sizeof(float));
    if (!m->layers || !m->norms || !m->inv_freq)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", m->dir);
    cpu_rope_inv_freq(m->inv_freq, c->head_dim, c->rope_theta);
    NC_TRY(load_mat(m, "model.embed_tokens.weight", c->vocab_size, c->hidden_size, &m->embed,
                    err));
    float *dst = m->norms;
    for (int l = 0; l < nl; l++) NC_TRY(load_layer(m, l, &dst, err));
    NC_TRY(load_norm(m, "model.norm.weight", c->hidden_size, &dst, &m->final_norm, err));
    /* lm_head.weight when stored (Qwen3-0.6B stores it although tied), else
     * the tied embedding. */
    if (hf_weights_find(m->weights, "lm_head.weight", NULL) || !c->tie_word_embeddings)
        return load_mat(m, "lm_head.weight", c->vocab_size, c->hidden_size, &m->lm_head, err);
    m->lm_head = m->embed;
    return NC_OK;
}

nc_status qwen3_load(const char *dir, const qwen3_load_options *opt, qwen3_model **out,
                     nc_error *err) {
    *out = NULL;
    qwen3_model *m = calloc(1, sizeof *m);
    if (!m || !(m->dir = strdup(dir))) {
        free(m);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
    }
    m->kern = cpu_kernels_get();
    nc_status st = qwen3_config_load(dir, &m->cfg, err);
    if (st == NC_OK) st = hf_weights_open(dir, &m->weights, err);
    if (st == NC_OK) st = load_weights(m, err);
    if (st == NC_OK) st = nc_pool_new(opt ? opt->n_threads : 0, &m->pool, err);
    if (st != NC_OK) {
        qwen3_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

void qwen3_free(qwen3_model *m) {
    if (!m) return;
    nc_pool_free(m->pool);
    hf_weights_close(m->weights);
    nc_free_aligned(m->norms);
    nc_free_aligned(m->inv_freq);
    free(m->layers);
    free(m->dir);
    free(m);
}

/* ---- per-sequence state ----------------------------------------------- */

nc_status qwen3_state_new(const qwen3_model *m, int ctx, qwen3_state **out, nc_error *err) {
    *out = NULL;
    const qwen3_config *c = &m->cfg;
    if (ctx <= 0 || ctx > c->max_position_embeddings) ctx = c->max_position_embeddings;
    qwen3_state *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "KV cache: out of memory");
    s->m = m;
    s->ctx = ctx;
    s->batch = s->batch_cap = ctx < QWEN3_MAX_BATCH ? ctx : QWEN3_MAX_BATCH;
    size_t kvd = (size_t)c->num_key_value_heads * c->head_dim;
    size_t qd = (size_t)c->num_attention_heads * c->head_dim;
    size_t b = (size_t)s->batch, cache = (size_t)c->num_hidden_layers * (size_t)ctx * kvd;
    int ovf = 0;
    size_t cache_bytes = nc_mul_size(cache, sizeof(float), &ovf);
    if (!ovf) {
        /* calloc, not nc_alloc_aligned: large callocs are fresh zero pages
         * that become resident only when a position is written, so a 4096
         * context costs memory only as it fills. (The kernels do unaligned
         * loads; 16-byte alignment is enough.) */
        s->k_cache = calloc(1, cache_bytes);
        s->v_cache = calloc(1, cache_bytes);
    }
    s->x = nc_alloc_aligned(b * c->hidden_size * sizeof(float));
    s->xb = nc_alloc_aligned(b * c->hidden_size * sizeof(float));
    s->q = nc_alloc_aligned(b * qd * sizeof(float));
    s->att = nc_alloc_aligned(b * qd * sizeof(float));
    s->hb = nc_alloc_aligned(b * c->intermediate_size * sizeof(float));
    s->hb2 = nc_alloc_aligned(b * c->intermediate_size * sizeof(float));
    s->rope_cos = nc_alloc_aligned(b * c->head_dim / 2 * sizeof(float));
    s->rope_sin = nc_alloc_aligned(b * c->head_dim / 2 * sizeof(float));
    s->scores = nc_alloc_aligned((size_t)nc_pool_threads(m->pool) * (size_t)ctx * sizeof(float));
    if (!s->k_cache || !s->v_cache || !s->x || !s->xb || !s->q || !s->att || !s->hb || !s->hb2 ||
        !s->rope_cos || !s->rope_sin || !s->scores) {
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
    float *bufs[] = {s->x, s->xb, s->q, s->att, s->hb, s->hb2, s->rope_cos, s->rope_sin, s->scores};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) nc_free_aligned(bufs[i]);
    free(s->k_cache);
    free(s->v_cache);
    free(s);
}

int qwen3_state_pos(const qwen3_state *s) { return s->pos; }
int qwen3_state_ctx(const qwen3_state *s) { return s->ctx; }
void qwen3_state_set_batch(qwen3_state *s, int max_rows) {
    s->batch = max_rows < 1 ? 1 : max_rows > s->batch_cap ? s->batch_cap : max_rows;
}
void qwen3_state_truncate(qwen3_state *s, int n_keep) {
    if (n_keep < 0) n_keep = 0;
    if (n_keep < s->pos) s->pos = n_keep;
}

/* ---- forward ---------------------------------------------------------- */

/* Runs fn over rows 0..n-1 on the pool (the elementwise steps). */
typedef struct {
    qwen3_state *s;
    const qwen3_layer *L;
    int n;
} step_ctx;

/* q_norm, k_norm and RoPE on row i of q and of the cache (position pos+i). */
static void qk_norm_rope_row(void *ctx, int i, int thread) {
    (void)thread;
    const step_ctx *sc = ctx;
    qwen3_state *s = sc->s;
    const qwen3_config *c = &s->m->cfg;
    int hd = c->head_dim, kvd = c->num_key_value_heads * hd;
    const float *cs = s->rope_cos + (size_t)i * hd / 2, *sn = s->rope_sin + (size_t)i * hd / 2;
    float *q = s->q + (size_t)i * c->num_attention_heads * hd;
    for (int h = 0; h < c->num_attention_heads; h++) {
        float *v = q + (size_t)h * hd;
        cpu_rmsnorm(v, v, sc->L->q_norm, hd, c->rms_norm_eps);
        cpu_rope_apply(v, cs, sn, hd);
    }
    int layer = (int)(sc->L - s->m->layers);
    float *k = s->k_cache + ((size_t)layer * s->ctx + (size_t)(s->pos + i)) * kvd;
    for (int h = 0; h < c->num_key_value_heads; h++) {
        float *v = k + (size_t)h * hd;
        cpu_rmsnorm(v, v, sc->L->k_norm, hd, c->rms_norm_eps);
        cpu_rope_apply(v, cs, sn, hd);
    }
}

static void silu_mul_row(void *ctx, int i, int thread) {
    (void)thread;
    const step_ctx *sc = ctx;
    size_t ff = (size_t)sc->s->m->cfg.intermediate_size;
    cpu_silu_mul(sc->s->hb + (size_t)i * ff, sc->s->hb2 + (size_t)i * ff, (int)ff);
}

static void rmsnorm_rows(const qwen3_config *c, float *out, const float *x, const float *w, int n) {
    size_t d = (size_t)c->hidden_size;
    for (int i = 0; i < n; i++) cpu_rmsnorm(out + i * d, x + i * d, w, (int)d, c->rms_norm_eps);
}

static void add_rows(float *x, const float *y, size_t count) {
    for (size_t i = 0; i < count; i++) x[i] += y[i];
}

/* One chunk of n <= batch tokens at positions s->pos .. s->pos + n - 1. */
static void forward_chunk(qwen3_model *m, qwen3_state *s, const int32_t *tokens, int n,
                          float *logits_last, float *logits_all) {
    const qwen3_config *c = &m->cfg;
    const cpu_kernels *K = m->kern;
    nc_pool *pool = m->pool;
    int d = c->hidden_size, hd = c->head_dim, ff = c->intermediate_size;
    size_t qd = (size_t)c->num_attention_heads * hd, kvd = (size_t)c->num_key_value_heads * hd;

    /* token embeddings, and the RoPE angles of each position */
    for (int i = 0; i < n; i++) {
        const unsigned char *row = (const unsigned char *)m->embed.data +
                                   (size_t)tokens[i] * d * cpu_wtype_size(m->embed.type);
        K->row_to_f32[m->embed.type](row, s->x + (size_t)i * d, d);
        cpu_rope_angles(s->rope_cos + (size_t)i * hd / 2, s->rope_sin + (size_t)i * hd / 2,
                        m->inv_freq, hd, s->pos + i);
    }

    for (int l = 0; l < c->num_hidden_layers; l++) {
        const qwen3_layer *L = &m->layers[l];
        step_ctx sc = {s, L, n};
        float *kc = s->k_cache + (size_t)l * s->ctx * kvd;
        float *vc = s->v_cache + (size_t)l * s->ctx * kvd;

        /* attention: norm, projections (K and V straight into the cache) */
        rmsnorm_rows(c, s->xb, s->x, L->attn_norm, n);
        cpu_matmul(pool, K, &L->q, s->xb, d, s->q, qd, n);
        cpu_matmul(pool, K, &L->k, s->xb, d, kc + (size_t)s->pos * kvd, kvd, n);
        cpu_matmul(pool, K, &L->v, s->xb, d, vc + (size_t)s->pos * kvd, kvd, n);
        nc_pool_for(pool, n, qk_norm_rope_row, &sc);
        cpu_attention_args aa = {
            .q = s->q, .k_cache = kc, .v_cache = vc, .out = s->att, .ldq = qd, .ldo = qd,
            .n = n, .pos0 = s->pos, .n_heads = c->num_attention_heads,
            .n_kv_heads = c->num_key_value_heads, .head_dim = hd,
            .scale = 1.0f / sqrtf((float)hd), .scores = s->scores, .scores_stride = (size_t)s->ctx};
        cpu_attention(pool, K, &aa);
        cpu_matmul(pool, K, &L->o, s->att, qd, s->xb, d, n);
        add_rows(s->x, s->xb, (size_t)n * d);

        /* MLP: down(silu(gate(x)) * up(x)) */
        rmsnorm_rows(c, s->xb, s->x, L->mlp_norm, n);
        cpu_matmul(pool, K, &L->gate, s->xb, d, s->hb, ff, n);
        cpu_matmul(pool, K, &L->up, s->xb, d, s->hb2, ff, n);
        nc_pool_for(pool, n, silu_mul_row, &sc);
        cpu_matmul(pool, K, &L->down, s->hb, ff, s->xb, d, n);
        add_rows(s->x, s->xb, (size_t)n * d);
    }

    /* final norm and LM head: every row for logits_all, else the last one */
    if (logits_all) {
        rmsnorm_rows(c, s->xb, s->x, m->final_norm, n);
        cpu_matmul(pool, K, &m->lm_head, s->xb, d, logits_all, (size_t)c->vocab_size, n);
        if (logits_last)
            memcpy(logits_last, logits_all + (size_t)(n - 1) * c->vocab_size,
                   (size_t)c->vocab_size * sizeof(float));
    } else if (logits_last) {
        rmsnorm_rows(c, s->xb, s->x + (size_t)(n - 1) * d, m->final_norm, 1);
        cpu_matmul(pool, K, &m->lm_head, s->xb, d, logits_last, (size_t)c->vocab_size, 1);
    }
    s->pos += n;
}

nc_status qwen3_forward(qwen3_model *m, qwen3_state *s, const int32_t *tokens, int n,
                        float *logits_last, float *logits_all, nc_error *err) {
    if (n < 0 || (n > 0 && !tokens))
        return nc_fail(err, NC_ERR_INVALID, "qwen3_forward: bad token array");
    if (n > s->ctx - s->pos)
        return nc_fail(err, NC_ERR_RANGE,
                       "context full: %d tokens in the cache + %d new > context of %d tokens",
                       s->pos, n, s->ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->cfg.vocab_size)
            return nc_fail(err, NC_ERR_INVALID,
                           "token id %d at index %d is outside the vocabulary (size %d)",
                           (int)tokens[i], i, m->cfg.vocab_size);
    size_t V = (size_t)m->cfg.vocab_size;
    for (int done = 0; done < n;) {
        int nc = n - done < s->batch ? n - done : s->batch;
        int is_last = done + nc == n;
        forward_chunk(m, s, tokens + done, nc, is_last ? logits_last : NULL,
                      logits_all ? logits_all + (size_t)done * V : NULL);
        done += nc;
    }
    return NC_OK;
}
