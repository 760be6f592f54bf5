/* Loading a ModernBERT folder into a modernbert_model: config, safetensors
 * (single or sharded), every tensor found by its HF name (with the "model."
 * prefix of the head classes, or without it for a bare ModernBertModel) and
 * checked for dtype (F32/F16/BF16) and shape; matrices left in the mmap,
 * norms and biases widened to fp32; the MLM decoder tied to the embeddings
 * when decoder.weight is absent. Also the growing batch workspace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "cpu/cpu_ops.h"
#include "cpu/gemm_bf16w.h"
#include "models/modernbert_impl.h"

const modernbert_config *modernbert_model_config(const modernbert_model *m) {
    return &m->cfg;
}
int modernbert_model_threads(const modernbert_model *m) {
    return nc_pool_threads(m->pool);
}
void modernbert_set_pack_budget(modernbert_model *m, size_t bytes) {
    m->pack_budget_bytes = bytes;
}
const char *modernbert_model_dtype(const modernbert_model *m) {
    return cpu_wtype_name(m->embed.type);
}

typedef struct loader {
    modernbert_model *m;
    const char *prefix; /* "model." or "" for the encoder's own tensors */
    float *dst;         /* next free slot in m->vecs */
    nc_error *err;
} loader;

static nc_status find(loader *L, const char *name, int ndim, int64_t d0, int64_t d1,
                      const st_tensor **out) {
    const char *file = NULL;
    const st_tensor *t = hf_weights_find(L->m->weights, name, &file);
    if (!t) return nc_fail(L->err, NC_ERR_NOT_FOUND, "%s: tensor '%s' not found", L->m->dir, name);
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16)
        return nc_fail(L->err, NC_ERR_UNSUPPORTED,
                       "%s: tensor '%s' has dtype %s; expected F32, F16 or BF16", file, name,
                       st_dtype_name(t->dtype));
    if (t->ndim != ndim || t->shape[0] != d0 || (ndim == 2 && t->shape[1] != d1)) {
        char got[96] = "";
        for (int i = 0, o = 0; i < t->ndim && o < 80; i++)
            o += snprintf(got + o, sizeof got - (size_t)o, "%s%lld", i ? ", " : "",
                          (long long)t->shape[i]);
        if (ndim == 2)
            return nc_fail(L->err, NC_ERR_FORMAT,
                           "%s: tensor '%s' has shape [%s]; the config needs [%lld, %lld]", file,
                           name, got, (long long)d0, (long long)d1);
        return nc_fail(L->err, NC_ERR_FORMAT,
                       "%s: tensor '%s' has shape [%s]; the config needs [%lld]", file, name, got,
                       (long long)d0);
    }
    if ((uintptr_t)t->data % st_dtype_size(t->dtype))
        return nc_fail(L->err, NC_ERR_UNSUPPORTED,
                       "%s: tensor '%s' is not aligned to its %zu-byte elements", file, name,
                       st_dtype_size(t->dtype));
    *out = t;
    return NC_OK;
}

static cpu_wtype wtype_of(st_dtype d) {
    return d == ST_F32 ? CPU_W_F32 : d == ST_F16 ? CPU_W_F16 : CPU_W_BF16;
}

static nc_status mat(loader *L, const char *name, int rows, int cols, cpu_mat *out) {
    const st_tensor *t;
    NC_TRY(find(L, name, 2, rows, cols, &t));
    out->type = wtype_of(t->dtype);
    out->data = t->data;
    out->rows = rows;
    out->cols = cols;
    return NC_OK;
}

static nc_status vec(loader *L, const char *name, int n, const float **out) {
    const st_tensor *t;
    NC_TRY(find(L, name, 1, n, 0, &t));
    cpu_kernels_scalar.row_to_f32[wtype_of(t->dtype)](t->data, L->dst, n);
    *out = L->dst;
    L->dst += n;
    return NC_OK;
}

/* The encoder's tensors are "model.x" in the head classes, "x" alone. */
static const char *enc_name(const loader *L, char *buf, size_t cap, const char *tail) {
    snprintf(buf, cap, "%s%s", L->prefix, tail);
    return buf;
}

/* "layers.<l>.<what>" under the encoder's prefix. */
static const char *layer_name(const loader *L, char *buf, size_t cap, int l, const char *what) {
    snprintf(buf, cap, "%slayers.%d.%s", L->prefix, l, what);
    return buf;
}

static nc_status load_layer(loader *L, int l) {
    const modernbert_config *c = &L->m->cfg;
    modernbert_layer *ly = &L->m->layers[l];
    int d = c->hidden_size, ff = c->intermediate_size;
    char n[200];
    if (l > 0) /* layer 0 has no attn_norm (nn.Identity) */
        NC_TRY(vec(L, layer_name(L, n, sizeof n, l, "attn_norm.weight"), d, &ly->attn_norm));
    NC_TRY(vec(L, layer_name(L, n, sizeof n, l, "mlp_norm.weight"), d, &ly->mlp_norm));
    NC_TRY(mat(L, layer_name(L, n, sizeof n, l, "attn.Wqkv.weight"), 3 * d, d, &ly->wqkv));
    NC_TRY(mat(L, layer_name(L, n, sizeof n, l, "attn.Wo.weight"), d, d, &ly->wo));
    NC_TRY(mat(L, layer_name(L, n, sizeof n, l, "mlp.Wi.weight"), 2 * ff, d, &ly->wi));
    NC_TRY(mat(L, layer_name(L, n, sizeof n, l, "mlp.Wo.weight"), d, ff, &ly->wo_mlp));
    return NC_OK;
}

static nc_status load_heads(loader *L) {
    modernbert_model *m = L->m;
    const modernbert_config *c = &m->cfg;
    int d = c->hidden_size;
    if (c->head == MODERNBERT_HEAD_NONE) return NC_OK;
    NC_TRY(mat(L, "head.dense.weight", d, d, &m->head_dense));
    if (c->classifier_bias) NC_TRY(vec(L, "head.dense.bias", d, &m->head_dense_bias));
    NC_TRY(vec(L, "head.norm.weight", d, &m->head_norm));
    if (c->head == MODERNBERT_HEAD_MLM) {
        /* decoder.weight is tied to the embeddings and usually not stored */
        if (hf_weights_find(m->weights, "decoder.weight", NULL))
            NC_TRY(mat(L, "decoder.weight", c->vocab_size, d, &m->decoder));
        else
            m->decoder = m->embed;
        if (c->decoder_bias) NC_TRY(vec(L, "decoder.bias", c->vocab_size, &m->decoder_bias));
        return NC_OK;
    }
    NC_TRY(mat(L, "classifier.weight", c->num_labels, d, &m->classifier));
    return vec(L, "classifier.bias", c->num_labels, &m->classifier_bias);
}

static nc_status load_weights(modernbert_model *m, nc_error *err) {
    const modernbert_config *c = &m->cfg;
    size_t d = (size_t)c->hidden_size, nl = (size_t)c->num_hidden_layers;
    size_t n_vec = (2 * nl + 5) * d + (size_t)c->vocab_size + (size_t)c->num_labels;
    m->layers = calloc(nl, sizeof *m->layers);
    m->vecs = nc_alloc_aligned(n_vec * sizeof(float));
    for (int i = 0; i < 2; i++)
        m->inv_freq[i] = nc_alloc_aligned((size_t)c->head_dim / 2 * sizeof(float));
    if (!m->layers || !m->vecs || !m->inv_freq[0] || !m->inv_freq[1])
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", m->dir);
    cpu_rope_inv_freq(m->inv_freq[0], c->head_dim, c->theta_global);
    cpu_rope_inv_freq(m->inv_freq[1], c->head_dim, c->theta_local);
    loader L = {m, "model.", m->vecs, err};
    if (!hf_weights_find(m->weights, "model.embeddings.tok_embeddings.weight", NULL) &&
        hf_weights_find(m->weights, "embeddings.tok_embeddings.weight", NULL))
        L.prefix = "";
    char n[200];
    NC_TRY(mat(&L, enc_name(&L, n, sizeof n, "embeddings.tok_embeddings.weight"), c->vocab_size,
               (int)d, &m->embed));
    NC_TRY(vec(&L, enc_name(&L, n, sizeof n, "embeddings.norm.weight"), (int)d, &m->embed_norm));
    for (int l = 0; l < c->num_hidden_layers; l++)
        NC_TRY(load_layer(&L, l));
    NC_TRY(vec(&L, enc_name(&L, n, sizeof n, "final_norm.weight"), (int)d, &m->final_norm));
    return load_heads(&L);
}

nc_status modernbert_workspace_reserve(modernbert_model *m, int batch, int seq, nc_error *err) {
    modernbert_workspace *w = &m->ws;
    const modernbert_config *c = &m->cfg;
    size_t rows = (size_t)batch * (size_t)seq;
    if (rows > w->rows) {
        size_t d = (size_t)c->hidden_size, ff = (size_t)c->intermediate_size;
        float **slots[] = {&w->x, &w->xn, &w->qkv[0], &w->qkv[1], &w->att, &w->hb, &w->raw};
        size_t width[] = {d, d, 3 * d, 3 * d, d, ff, 3 * d > 2 * ff ? 3 * d : 2 * ff};
        for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
            float **slot = slots[i];
            nc_free_aligned(*slot);
            *slot = nc_alloc_aligned(rows * width[i] * sizeof(float));
            if (!*slot) {
                w->rows = 0;
                return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for %zu rows", m->dir, rows);
            }
        }
        int widest = c->intermediate_size > c->hidden_size ? c->intermediate_size : c->hidden_size;
        nc_free_aligned(w->blocks);
        nc_free_aligned(w->tiles);
        nc_free_aligned(w->gated_tiles);
        w->blocks = nc_alloc_aligned(
            cpu_packed_scratch_floats(nc_pool_threads(m->pool), (int)rows, widest) * sizeof(float));
        w->tiles = nc_alloc_aligned(cpu_bf16w_tiles_floats((int)rows, (int)d) * sizeof(float));
        w->gated_tiles =
            nc_alloc_aligned(cpu_bf16w_tiles_floats((int)rows, (int)ff) * sizeof(float));
        if (!w->blocks || !w->tiles || !w->gated_tiles) {
            w->rows = 0;
            return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", m->dir);
        }
        NC_TRY(cpu_prompt_scratch_reserve(&w->prompt, m->kern, nc_pool_threads(m->pool), (int)rows,
                                          widest, m->dir, err));
        w->rows = rows;
    }
    if (seq > w->seq_cap) {
        size_t half = (size_t)c->head_dim / 2;
        nc_free_aligned(w->rope_cos);
        nc_free_aligned(w->rope_sin);
        nc_free_aligned(w->scores);
        w->rope_cos = nc_alloc_aligned(2 * (size_t)seq * half * sizeof(float));
        w->rope_sin = nc_alloc_aligned(2 * (size_t)seq * half * sizeof(float));
        /* per thread: the scores of a block of queries */
        w->scores = nc_alloc_aligned((size_t)nc_pool_threads(m->pool) *
                                     (size_t)MODERNBERT_ATT_QBLOCK * (size_t)seq * sizeof(float));
        if (!w->rope_cos || !w->rope_sin || !w->scores) {
            w->seq_cap = 0;
            return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for sequences of %d", m->dir, seq);
        }
        for (int t = 0; t < 2; t++)
            for (int p = 0; p < seq; p++) {
                size_t at = ((size_t)t * (size_t)seq + (size_t)p) * half;
                cpu_rope_angles(w->rope_cos + at, w->rope_sin + at, m->inv_freq[t], c->head_dim, p);
            }
        w->seq_cap = seq;
    }
    return NC_OK;
}

nc_status modernbert_pack_weights(modernbert_model *m, nc_error *err) {
    if (m->is_packed) return NC_OK;
    size_t used = 0;
    for (int l = 0; l < m->cfg.num_hidden_layers; l++) {
        modernbert_layer *L = &m->layers[l];
        const cpu_mat *mats[] = {&L->wqkv, &L->wo, &L->wi, &L->wo_mlp};
        cpu_packed *packs[] = {&L->pqkv, &L->pwo, &L->pwi, &L->pwo_mlp};
        for (int i = 0; i < 4; i++) {
            int parts = mats[i] == &L->wi ? 2 : 1;
            size_t bytes = cpu_packed_bytes(m->kern, mats[i], parts);
            if (!cpu_packed_wanted(m->kern, mats[i]->type) || used + bytes > m->pack_budget_bytes)
                continue;
            used += bytes;
            if (packs[i]->panel) continue; /* packed by an earlier, failed call */
            char what[64];
            snprintf(what, sizeof what, "%s: layer %d", m->dir, l);
            NC_TRY(cpu_packed_init(packs[i], m->pool, m->kern, mats[i], parts, what, err));
        }
    }
    m->is_packed = 1;
    return NC_OK;
}

static void weights_unpack(modernbert_model *m) {
    for (int l = 0; m->layers && l < m->cfg.num_hidden_layers; l++) {
        modernbert_layer *L = &m->layers[l];
        cpu_packed_free(&L->pqkv);
        cpu_packed_free(&L->pwo);
        cpu_packed_free(&L->pwi);
        cpu_packed_free(&L->pwo_mlp);
    }
}

static void workspace_free(modernbert_workspace *w) {
    float *bufs[] = {w->x,      w->xn,     w->qkv[0],      w->qkv[1],   w->att,
                     w->hb,     w->raw,    w->blocks,      w->tiles,    w->gated_tiles,
                     w->rope_cos, w->rope_sin, w->scores};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        nc_free_aligned(bufs[i]);
    cpu_prompt_scratch_free(&w->prompt);
}

nc_status modernbert_load(const char *dir, int n_threads, modernbert_model **out, nc_error *err) {
    *out = NULL;
    modernbert_model *m = calloc(1, sizeof *m);
    if (!m || !(m->dir = strdup(dir))) {
        free(m);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
    }
    m->kern = cpu_kernels_get();
    m->pack_budget_bytes = MODERNBERT_PACK_BUDGET_BYTES;
    nc_status st = modernbert_config_load(dir, &m->cfg, err);
    if (st == NC_OK) st = hf_weights_open_to_run(dir, &m->weights, err);
    if (st == NC_OK) st = load_weights(m, err);
    if (st == NC_OK) st = nc_pool_new(n_threads, &m->pool, err);
    if (st != NC_OK) {
        modernbert_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

void modernbert_free(modernbert_model *m) {
    if (!m) return;
    nc_pool_free(m->pool);
    workspace_free(&m->ws);
    weights_unpack(m);
    hf_weights_close(m->weights);
    nc_free_aligned(m->vecs);
    nc_free_aligned(m->inv_freq[0]);
    nc_free_aligned(m->inv_freq[1]);
    free(m->layers);
    modernbert_config_free(&m->cfg);
    free(m->dir);
    free(m);
}
