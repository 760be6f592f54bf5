/* The encoder engines: modernbert-cpu (src/models/modernbert) and
 * modernbert-mil (an encoder bundle run by the MIL interpreter through
 * src/lower/modernbert_run, its host side being the checkpoint's CPU
 * engine). Both answer encode with modernbert_io's contract. */
#include <stdlib.h>

#include "engine/engines.h"
#include "lower/modernbert_run.h"

typedef struct enc_engine {
    modernbert_model *m; /* cpu: owned; mil: the runner's host */
    mb_run *run;         /* mil only */
} enc_engine;

static nc_status cpu_encode(engine *e, const modernbert_io *io, nc_error *err) {
    return modernbert_forward(((enc_engine *)e->impl)->m, io, err);
}

static nc_status mil_encode(engine *e, const modernbert_io *io, nc_error *err) {
    return mb_run_forward(((enc_engine *)e->impl)->run, io, err);
}

static void enc_close(engine *e) {
    enc_engine *x = e->impl;
    if (!x) return;
    if (x->run)
        mb_run_free(x->run);
    else
        modernbert_free(x->m);
    free(x);
    e->impl = NULL;
}

static const engine_ops cpu_ops = {.encode = cpu_encode, .close = enc_close};
static const engine_ops mil_ops = {.encode = mil_encode, .close = enc_close};

static void fill(engine *e, const modernbert_model *m) {
    const modernbert_config *c = modernbert_model_config(m);
    e->encoder = c;
    e->n_vocab = c->vocab_size;
    e->n_layers = c->num_hidden_layers;
    e->hidden = c->hidden_size;
    e->ctx_max = c->max_position_embeddings;
    e->weight_dtype = modernbert_model_dtype(m);
    e->n_threads = modernbert_model_threads(m);
}

nc_status engine_open_modernbert_cpu(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err) {
    enc_engine *x = calloc(1, sizeof *x);
    if (!x) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->impl = x;
    e->ops = &cpu_ops;
    NC_TRY(modernbert_load(dir, opt->n_threads, &x->m, err));
    fill(e, x->m);
    return NC_OK;
}

nc_status engine_open_modernbert_mil(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err) {
    enc_engine *x = calloc(1, sizeof *x);
    if (!x) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->impl = x;
    e->ops = &mil_ops;
    NC_TRY(mb_run_open(dir, opt->n_threads, &x->run, err));
    x->m = mb_run_host(x->run);
    fill(e, x->m);
    e->weight_dtype = "fp16";
    return NC_OK;
}
