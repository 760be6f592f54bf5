/* Opening a model for the public API: a folder or a bundle, a decoder or an
 * encoder, on the cpu or mil backend; and what a caller may ask of it. */
#include <stdlib.h>
#include <string.h>

#include "api/api_model.h"
#include "api/api_options.h"
#include "base/mmap.h"
#include "lower/manifest.h"
#include "lower/modernbert_compile.h"
#include "lower/modernbert_manifest.h"

#define DEFAULT_CTX 4096

static const char *const OPEN_KEYS[] = {"threads", "ctx", "kv", NULL};

static nc_status open_decoder(nc_model *m, const char *path, int is_mil, const char *kv,
                              nc_error *err) {
    m->kind = NC_MODEL_DECODER;
    if (is_mil) {
        /* each sequence opens the bundle's programs with its own KV cache;
         * the manifest is read here so a bad bundle fails at open */
        lower_manifest man;
        NC_TRY(lower_manifest_read(path, &man, err));
        m->ctx = man.ctx;
        m->n_vocab = man.cfg.vocab_size;
        m->n_embd = man.cfg.hidden_size;
        lower_manifest_free(&man);
        m->bundle = strdup(path);
        return m->bundle ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "nc_model_open: out of memory");
    }
    qwen3_load_options lo = {m->n_threads};
    NC_TRY(qwen3_load(path, &lo, &m->qwen3, err));
    if (kv) qwen3_model_set_kv_f16(m->qwen3, !strcmp(kv, "f16"));
    return NC_OK;
}

static nc_status open_encoder(nc_model *m, const char *path, int is_mil, nc_error *err) {
    m->kind = NC_MODEL_ENCODER;
    if (is_mil) {
        NC_TRY(mb_run_open(path, m->n_threads, &m->enc_run, err));
        m->enc = mb_run_host(m->enc_run);
        return NC_OK;
    }
    return modernbert_load(path, m->n_threads, &m->enc, err);
}

NC_API nc_status nc_model_open(const char *path, const char *backend, const char *const *options,
                               nc_model **out, nc_error *err) {
    if (!path || !out) return nc_fail(err, NC_ERR_INVALID, "nc_model_open: NULL argument");
    *out = NULL;
    if (!backend) backend = "cpu";
    if (!strcmp(backend, "ane"))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "nc_model_open: backend 'ane' is not available in this version (run the "
                       "bundle with backend 'mil')");
    if (strcmp(backend, "cpu") && strcmp(backend, "mil"))
        return nc_fail(err, NC_ERR_INVALID, "nc_model_open: backend '%s' is not cpu, mil or ane",
                       backend);
    int is_mil = !strcmp(backend, "mil");
    int threads = 0, ctx = DEFAULT_CTX;
    NC_TRY(api_opt_check(options, OPEN_KEYS, "nc_model_open", err));
    NC_TRY(api_opt_int(options, "threads", 0, 4096, &threads, "nc_model_open", err));
    NC_TRY(api_opt_int(options, "ctx", 1, 1 << 24, &ctx, "nc_model_open", err));
    const char *kv = api_opt_get(options, "kv");
    if (kv && strcmp(kv, "f16") && strcmp(kv, "f32"))
        return nc_fail(err, NC_ERR_INVALID, "nc_model_open: option kv=%s is not f16 or f32", kv);
    if (!nc_is_dir(path)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: not a folder", path);
    if (is_mil && api_opt_get(options, "ctx"))
        return nc_fail(err, NC_ERR_INVALID,
                       "nc_model_open: option ctx: a bundle's context is fixed when it is "
                       "compiled (%s)",
                       path);

    nc_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "nc_model_open: out of memory");
    m->n_threads = threads;
    m->ctx = ctx;
    nc_status st = tok_load(path, &m->tokenizer.tok, err);
    int is_encoder = is_mil ? mb_manifest_is_encoder(path) : lower_is_modernbert_dir(path);
    if (st == NC_OK)
        st = is_encoder ? open_encoder(m, path, is_mil, err)
                        : open_decoder(m, path, is_mil, kv, err);
    if (st != NC_OK) {
        nc_model_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

NC_API void nc_model_free(nc_model *m) {
    if (!m) return;
    tok_free(m->tokenizer.tok);
    qwen3_free(m->qwen3);
    free(m->bundle);
    if (m->enc_run)
        mb_run_free(m->enc_run);
    else
        modernbert_free(m->enc);
    free(m);
}

NC_API nc_model_kind nc_model_get_kind(const nc_model *m) {
    return m ? m->kind : 0;
}

NC_API const nc_tokenizer *nc_model_tokenizer(const nc_model *m) {
    return m ? &m->tokenizer : NULL;
}

NC_API int nc_model_vocab_size(const nc_model *m) {
    if (!m) return 0;
    if (m->enc) return modernbert_model_config(m->enc)->vocab_size;
    if (m->qwen3) return qwen3_model_config(m->qwen3)->vocab_size;
    return m->n_vocab;
}

NC_API int nc_model_embedding_size(const nc_model *m) {
    if (!m) return 0;
    if (m->enc) return modernbert_model_config(m->enc)->hidden_size;
    if (m->qwen3) return qwen3_model_config(m->qwen3)->hidden_size;
    return m->n_embd;
}

NC_API int nc_model_num_labels(const nc_model *m) {
    if (!m || !m->enc) return 0;
    const modernbert_config *c = modernbert_model_config(m->enc);
    return c->head == MODERNBERT_HEAD_CLASSIFIER ? c->num_labels : 0;
}

NC_API const char *nc_model_label(const nc_model *m, int i) {
    if (i < 0 || i >= nc_model_num_labels(m)) return NULL;
    return modernbert_model_config(m->enc)->id2label[i];
}
