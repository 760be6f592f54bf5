/* Loading a decision-model folder: the encoder through modernbert_load,
 * decision.json through decision_config_parse, and decision.safetensors
 * with every tensor's shape checked against the config (and no tensor the
 * config does not name, so a file made for another H fails). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/mmap.h"
#include "decide/decision_impl.h"
#include "models/hf_tensors.h"

#define HEAD_FILE "decision.safetensors"

/* The fp32 floats every vector of the head takes. */
static size_t vec_floats(const decision_config *c) {
    size_t d = (size_t)c->hidden_size;
    size_t per_layer = 4 * d + 3 * d + d + (size_t)c->head_intermediate + d;
    return (size_t)c->type_vocab_size * d + (size_t)c->head_layers * per_layer +
           (size_t)c->scorer_hidden + 1 + (size_t)c->action_hidden + (size_t)c->num_actions;
}

static nc_status load_linear(decision_model *m, const char *path, const char *name, int rows,
                             int cols, float **dst, decision_linear *out, nc_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.weight", name);
    NC_TRY(hft_load_mat(&m->head_file, path, key, rows, cols, &out->w, err));
    if (cpu_wtype_is_quant(out->w.type))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: tensor '%s' must be F32, F16 or BF16", path,
                       key);
    snprintf(key, sizeof key, "%s.bias", name);
    return hft_load_vec(&m->head_file, path, key, 1, (const int64_t[]){rows}, dst, &out->b, err);
}

static nc_status load_norm(decision_model *m, const char *path, const char *name, float **dst,
                           const float **w, const float **b, nc_error *err) {
    char key[128];
    const int64_t d[1] = {m->cfg.hidden_size};
    snprintf(key, sizeof key, "%s.weight", name);
    NC_TRY(hft_load_vec(&m->head_file, path, key, 1, d, dst, w, err));
    snprintf(key, sizeof key, "%s.bias", name);
    return hft_load_vec(&m->head_file, path, key, 1, d, dst, b, err);
}

static nc_status load_head(decision_model *m, const char *path, nc_error *err) {
    const decision_config *c = &m->cfg;
    int d = c->hidden_size, in = c->head_intermediate;
    int expected = 1 + 12 * c->head_layers + 8; /* type table; 12 per layer; scorer, action */
    if (m->shard->n_tensors != expected)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: %d tensors; decision.json (head_layers = %d) needs %d", path,
                       m->shard->n_tensors, c->head_layers, expected);
    m->vecs = nc_alloc_aligned(vec_floats(c) * sizeof(float));
    m->layers = calloc((size_t)(c->head_layers ? c->head_layers : 1), sizeof *m->layers);
    if (!m->vecs || !m->layers) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    float *dst = m->vecs;
    NC_TRY(hft_load_vec(&m->head_file, path, "type_embeddings", 2,
                        (const int64_t[]){c->type_vocab_size, d}, &dst, &m->type_emb, err));
    for (int i = 0; i < c->head_layers; i++) {
        decision_layer *L = &m->layers[i];
        char name[64];
#define NAME(part) (snprintf(name, sizeof name, "head.%d.%s", i, part), name)
        NC_TRY(load_norm(m, path, NAME("attn_norm"), &dst, &L->attn_norm_w, &L->attn_norm_b, err));
        NC_TRY(load_linear(m, path, NAME("qkv"), 3 * d, d, &dst, &L->qkv, err));
        NC_TRY(load_linear(m, path, NAME("out"), d, d, &dst, &L->out, err));
        NC_TRY(load_norm(m, path, NAME("mlp_norm"), &dst, &L->mlp_norm_w, &L->mlp_norm_b, err));
        NC_TRY(load_linear(m, path, NAME("mlp_in"), in, d, &dst, &L->mlp_in, err));
        NC_TRY(load_linear(m, path, NAME("mlp_out"), d, in, &dst, &L->mlp_out, err));
#undef NAME
    }
    NC_TRY(load_linear(m, path, "scorer.0", c->scorer_hidden, d, &dst, &m->scorer1, err));
    NC_TRY(load_linear(m, path, "scorer.2", 1, c->scorer_hidden, &dst, &m->scorer2, err));
    NC_TRY(load_linear(m, path, "action.0", c->action_hidden, c->feature_width, &dst, &m->action1,
                       err));
    return load_linear(m, path, "action.2", c->num_actions, c->action_hidden, &dst, &m->action2,
                       err);
}

static nc_status load(decision_model *m, const char *dir, int n_threads, nc_error *err) {
    char path[4096];
    if (!m->enc) NC_TRY(modernbert_load(dir, n_threads, &m->enc, err));
    char *json = NULL;
    size_t len = 0;
    hf_path_join(path, sizeof path, dir, "decision.json");
    NC_TRY(nc_read_file(path, &json, &len, err));
    nc_status st = decision_config_parse(json, len, path, modernbert_model_config(m->enc), &m->cfg,
                                         err);
    free(json);
    NC_TRY(st);
    hf_path_join(path, sizeof path, dir, HEAD_FILE);
    NC_TRY(st_open(path, &m->shard, err));
    m->head_file.shards = &m->shard;
    m->head_file.n_shards = 1;
    NC_TRY(load_head(m, path, err));
    m->kern = cpu_kernels_get();
    return nc_pool_new(n_threads, &m->pool, err);
}

nc_status decision_load_with(const char *dir, modernbert_model *enc, int n_threads,
                             decision_model **out, nc_error *err) {
    *out = NULL;
    decision_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
    m->enc = enc;
    m->borrows_enc = enc != NULL;
    nc_status st = load(m, dir, n_threads, err);
    if (st != NC_OK) {
        decision_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

nc_status decision_load(const char *dir, int n_threads, decision_model **out, nc_error *err) {
    return decision_load_with(dir, NULL, n_threads, out, err);
}

nc_status decision_reserve(decision_model *m, int batch, int seq, nc_error *err) {
    size_t rows = (size_t)batch * (size_t)seq;
    if (rows <= m->rows) return NC_OK;
    size_t d = (size_t)m->cfg.hidden_size, in = (size_t)m->cfg.head_intermediate;
    float **bufs[] = {&m->h, &m->xn, &m->qkv, &m->att, &m->mid, &m->scores};
    size_t widths[] = {d, d, 3 * d, d, in > d ? in : d, (size_t)m->cfg.head_heads};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        nc_free_aligned(*bufs[i]);
        *bufs[i] = nc_alloc_aligned(rows * widths[i] * sizeof(float));
    }
    free(m->markers);
    free(m->types);
    m->markers = malloc((size_t)batch * (size_t)m->cfg.num_markers * sizeof *m->markers);
    m->types = malloc(rows * sizeof *m->types);
    m->rows = rows;
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (!*bufs[i]) m->rows = 0;
    if (!m->markers || !m->types) m->rows = 0;
    return m->rows ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "decision: out of memory for %zu rows", rows);
}

void decision_free(decision_model *m) {
    if (!m) return;
    if (m->region_free) m->region_free(m->region_user);
    float *bufs[] = {m->h, m->xn, m->qkv, m->att, m->mid, m->scores, m->vecs};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        nc_free_aligned(bufs[i]);
    free(m->markers);
    free(m->types);
    free(m->layers);
    nc_pool_free(m->pool);
    st_close(m->shard);
    decision_config_free(&m->cfg);
    if (!m->borrows_enc) modernbert_free(m->enc);
    free(m);
}

const decision_config *decision_model_config(const decision_model *m) { return &m->cfg; }
modernbert_model *decision_model_encoder(decision_model *m) { return m->enc; }
