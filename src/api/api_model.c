/* Opening a model for the public API: a folder or a bundle, a decoder or an
 * encoder, on one of the engine seam's backends (src/engine); and what a
 * caller may ask of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_hub.h"
#include "api/api_model.h"
#include "api/api_options.h"
#include "api/api_wisdom.h"
#include "engine/engine_options.h"

#define DEFAULT_CTX 4096

/* Speculative decoding's options (draft_options), beside the engine's. */
static const char *const DRAFT_KEYS[] = {"draft",       "draft_max",     "draft_min",
                                         "draft_p_min", "draft_backend", NULL};

/* The key=value options as the engine's: every key a row of the engine
 * option table (engine_options.h), parsed by its one parser, beside
 * hf_cache (where a hub model id is looked up: api_hub.h). */
static nc_status engine_opts(const char *const *options, engine_options *o, nc_error *err) {
    memset(o, 0, sizeof *o);
    int n = 0;
    while (engine_option_at(n))
        n++;
    /* the table's keys, hf_cache, the draft's, NULL */
    const char **keys = malloc(((size_t)n + 1) * sizeof *keys + sizeof DRAFT_KEYS);
    if (!keys) return nc_fail(err, NC_ERR_NOMEM, "nc_model_open: out of memory");
    for (int i = 0; i < n; i++)
        keys[i] = engine_option_at(i)->key;
    keys[n] = "hf_cache";
    memcpy(keys + n + 1, DRAFT_KEYS, sizeof DRAFT_KEYS);
    nc_status st = api_opt_check(options, keys, "nc_model_open", err);
    for (int i = 0; i < n && st == NC_OK; i++) {
        const char *v = api_opt_get(options, keys[i]);
        char what[64];
        snprintf(what, sizeof what, "nc_model_open: option %s", keys[i]);
        if (v) st = engine_option_set(o, keys[i], v, what, err);
    }
    free(keys);
    return st;
}

/* The backend name (NULL: cpu) checked, and the options as the engine's. */
static nc_status backend_opts(const char **backend, const char *const *options, engine_options *eo,
                              nc_error *err) {
    if (!*backend) *backend = "cpu";
    NC_TRY(engine_backend_check(*backend, "nc_model_open: backend", err));
    return engine_opts(options, eo, err);
}

NC_API nc_status nc_backend_available(const char *backend, const char *const *options,
                                      nc_error *err) {
    engine_options eo;
    NC_TRY(backend_opts(&backend, options, &eo, err));
    if (!strcmp(backend, "ane") && eo.ane_device == ENGINE_ANE_REAL)
        return engine_ane_real_available(err);
    return NC_OK;
}

/* "draft=DIR" (and draft_max, draft_min, draft_p_min, draft_backend):
 * speculative decoding with DIR as m's draft. */
static nc_status draft_options(nc_model *m, const char *const *options, const engine_options *eo,
                               nc_error *err) {
    const char *dir = api_opt_get(options, "draft");
    const char *backend = api_opt_get(options, "draft_backend");
    const char *p_min = api_opt_get(options, "draft_p_min");
    gen_spec_options so = {GEN_SPEC_DRAFT_MAX, 0, 0.0f};
    NC_TRY(api_opt_int(options, "draft_max", 1, GEN_SPEC_DRAFT_CAP, &so.draft_max,
                       "nc_model_open", err));
    NC_TRY(api_opt_int(options, "draft_min", 0, GEN_SPEC_DRAFT_CAP, &so.draft_min,
                       "nc_model_open", err));
    if (p_min) {
        char *end;
        so.p_min = strtof(p_min, &end);
        if (end == p_min || *end || !(so.p_min >= 0.0f && so.p_min <= 1.0f))
            return nc_fail(err, NC_ERR_INVALID,
                           "nc_model_open: option draft_p_min=%s is not a number in [0, 1]", p_min);
    }
    if (!dir) {
        if (backend || p_min || api_opt_get(options, "draft_max") ||
            api_opt_get(options, "draft_min"))
            return nc_fail(err, NC_ERR_INVALID,
                           "nc_model_open: the draft_* options need draft=DIR");
        return NC_OK;
    }
    if (!backend) backend = "cpu";
    NC_TRY(engine_backend_check(backend, "nc_model_open: option draft_backend", err));
    return api_model_set_draft(m, dir, backend, eo, &so, err);
}

nc_status api_model_set_draft(nc_model *m, const char *dir, const char *backend,
                              const engine_options *eo, const gen_spec_options *so,
                              nc_error *err) {
    if (m->kind != NC_MODEL_DECODER)
        return nc_fail(err, NC_ERR_INVALID,
                       "%s is an encoder: a draft (speculative decoding) is for text generation",
                       m->dir);
    return gen_spec_attach(m->gm, backend ? backend : "cpu", dir, eo, so, err);
}

NC_API nc_status nc_model_open(const char *path, const char *backend, const char *const *options,
                               nc_model **out, nc_error *err) {
    if (!path || !out) return nc_fail(err, NC_ERR_INVALID, "nc_model_open: NULL argument");
    *out = NULL;
    engine_options eo;
    NC_TRY(backend_opts(&backend, options, &eo, err));
    char located[4096]; /* a hub model id's snapshot folder */
    NC_TRY(api_hub_locate(path, options, located, sizeof located, err));
    NC_TRY(api_model_open(located, backend, &eo, out, err));
    nc_status st = draft_options(*out, options, &eo, err);
    if (st != NC_OK) {
        nc_model_free(*out);
        *out = NULL;
    }
    return st;
}

nc_status api_model_open(const char *path, const char *backend, const engine_options *opt,
                         nc_model **out, nc_error *err) {
    *out = NULL;
    engine_options eo = *opt;
    if (!backend) backend = "cpu";
    const char *kind;
    NC_TRY(engine_kind_for(backend, path, &kind, err));
    /* the decoder slots' kernels; an encoder runs on its own panels */
    if (!strcmp(backend, "cpu") && !engine_kind_family(kind)->is_encoder)
        NC_TRY(api_tune_cpu_kernels(eo.n_threads, err));

    nc_model *m = calloc(1, sizeof *m);
    if (!m || !(m->dir = strdup(path))) {
        free(m);
        return nc_fail(err, NC_ERR_NOMEM, "nc_model_open: out of memory");
    }
    nc_status st;
    if (engine_kind_family(kind)->is_encoder) {
        m->kind = NC_MODEL_ENCODER;
        st = tok_load(path, &m->tokenizer.tok, err);
        if (st == NC_OK) st = engine_open(kind, path, &eo, &m->enc, err);
        if (st == NC_OK)
            st = modernbert_st_load(path, m->enc->encoder->pooling == MODERNBERT_POOL_CLS
                                              ? MODERNBERT_ST_CLS : MODERNBERT_ST_MEAN,
                                    &m->st, err);
    } else {
        m->kind = NC_MODEL_DECODER;
        st = gen_model_open(backend, path, &eo, &m->gm, err);
        if (st == NC_OK) {
            m->tokenizer.tok = m->gm->tok;
            /* a bundle's context is fixed; a folder's sequences get ctx
             * (or DEFAULT_CTX) tokens, at most what the model allows */
            int ctx_max = m->gm->e->ctx_max;
            m->ctx = strcmp(backend, "cpu") ? 0 : eo.ctx > 0 ? eo.ctx : DEFAULT_CTX;
            if (m->ctx > ctx_max) m->ctx = ctx_max;
        }
    }
    if (st != NC_OK) {
        nc_model_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

NC_API void nc_model_free(nc_model *m) {
    if (!m) return;
    if (m->gm)
        gen_model_close(m->gm);
    else
        tok_free(m->tokenizer.tok);
    engine_close(m->enc);
    modernbert_st_free(&m->st);
    free(m->dir);
    free(m);
}

NC_API nc_model_kind nc_model_get_kind(const nc_model *m) {
    return m ? m->kind : 0;
}

NC_API const nc_tokenizer *nc_model_tokenizer(const nc_model *m) {
    return m ? &m->tokenizer : NULL;
}

static const engine *eng(const nc_model *m) {
    return !m ? NULL : m->gm ? m->gm->e : m->enc;
}

NC_API int nc_model_vocab_size(const nc_model *m) {
    const engine *e = eng(m);
    return !e ? 0 : e->encoder ? e->encoder->vocab_size : e->n_vocab;
}

NC_API int nc_model_embedding_size(const nc_model *m) {
    const engine *e = eng(m);
    return e ? e->hidden : 0;
}

NC_API int nc_model_num_layers(const nc_model *m) {
    const engine *e = eng(m);
    return e ? e->n_layers : 0;
}

NC_API nc_status nc_model_set_layer_callback(nc_model *m, nc_layer_callback cb, void *user,
                                             nc_error *err) {
    if (!m) return nc_fail(err, NC_ERR_INVALID, "nc_model_set_layer_callback: NULL argument");
    if (m->kind != NC_MODEL_DECODER)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "nc_model_set_layer_callback: only decoders report their layers");
    return engine_set_layer_hook(m->gm->e, cb, user, err);
}

NC_API int nc_model_num_labels(const nc_model *m) {
    const engine *e = eng(m);
    if (!e || !e->encoder) return 0;
    return e->encoder->head == MODERNBERT_HEAD_CLASSIFIER ? e->encoder->num_labels : 0;
}

NC_API const char *nc_model_placement(const nc_model *m) {
    const engine *e = eng(m);
    return e ? engine_placement(e) : NULL;
}

NC_API const char *nc_model_label(const nc_model *m, int i) {
    if (i < 0 || i >= nc_model_num_labels(m)) return NULL;
    return m->enc->encoder->id2label[i];
}
