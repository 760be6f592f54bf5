/* The encoder engines: modernbert-cpu (src/models/modernbert), and over an
 * encoder bundle through the host side of src/engine/modernbert_bundle_host (the
 * checkpoint's CPU engine around the island) modernbert-mil (the island
 * run by the MIL interpreter) and modernbert-ane (the island run by the
 * ane_host runner on a device, fake or real, as the decoders' ane engine). All answer
 * encode with modernbert_io's contract. */
#include <stdlib.h>

#include "ane_host/ane_runner.h"
#include "base/log.h"
#include "engine/engine_ane_device.h"
#include "engine/engines.h"
#include "engine/modernbert_bundle_host.h"

typedef struct enc_engine {
    modernbert_model *m; /* cpu: owned; mil, ane: the host's */
    mb_run *run;         /* mil, ane */
    /* ane: the bundle loaded on the device and one runner (no KV cache) */
    engine_ane_dev dev;
    ane_bundle *loaded;
    ane_runner *r;
    char placement[1024]; /* engine.placement */
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
    ane_runner_free(x->r);
    ane_bundle_free(x->loaded);
    engine_ane_device_close(&x->dev);
    if (x->run)
        mb_run_free(x->run);
    else
        modernbert_free(x->m);
    free(x);
    e->impl = NULL;
}

static const engine_ops cpu_ops = {.encode = cpu_encode, .close = enc_close};
static const engine_ops mil_ops = {.encode = mil_encode, .close = enc_close};

/* The island on the device (mb_island_fn): inputs padded into the
 * function's surfaces, its one request, `hidden` read back. */
static nc_status ane_island(void *user, int B, int L, const float *x, const float *mg,
                            const float *ml, float *const *out, nc_error *err) {
    enc_engine *a = user;
    const modernbert_config *c = modernbert_model_config(a->m);
    size_t nx = (size_t)B * c->hidden_size * L, nm = (size_t)B * L * L;
    for (int k = 0; k < c->num_hidden_layers - 1; k++)
        if (out[k])
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "the ANE returns the last layer only: per-layer hidden states need "
                           "the mil backend");
    NC_TRY(ane_runner_write(a->r, B, L, "x", x, nx, err));
    NC_TRY(ane_runner_write(a->r, B, L, "mask_global", mg, nm, err));
    if (ml) NC_TRY(ane_runner_write(a->r, B, L, "mask_local", ml, nm, err));
    NC_TRY(ane_runner_run(a->r, B, L, -1, (ane_run_mode)a->dev.dev.preferred_mode, err));
    return ane_runner_read(a->r, B, L, "hidden", out[c->num_hidden_layers - 1], nx, err);
}

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

nc_status engine_open_modernbert_ane(const char *dir, const engine_options *opt, engine *e,
                                     nc_error *err) {
    /* the device first: a real one off macOS is the one-line refusal */
    engine_ane_dev dev = {0};
    NC_TRY(engine_ane_device_open(opt, &dev, err));
    nc_status st = engine_open_modernbert_mil(dir, opt, e, err);
    enc_engine *x = e->impl;
    if (x)
        x->dev = dev;
    else
        engine_ane_device_close(&dev);
    NC_TRY(st);
    NC_TRY(ane_bundle_open(&x->dev.dev, dir, &x->loaded, err));
    char where[900];
    ane_bundle_placement(x->loaded, where, sizeof where);
    snprintf(x->placement, sizeof x->placement, "%s: %s",
             x->dev.is_fake ? "ane (fake device)" : "ane", where);
    e->placement = x->placement;
    nc_log(NC_LOG_INFO, "%s", x->placement);
    NC_TRY(ane_runner_new(x->loaded, &x->r, err));
    mb_run_set_island(x->run, ane_island, x);
    if (x->dev.is_fake) e->kind = "modernbert-ane (fake device)";
    return NC_OK;
}
