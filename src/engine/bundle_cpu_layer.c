/* The ane engine's refused layers on the CPU decoder (bundle_cpu_layer.h). */
#include "engine/bundle_cpu_layer.h"

#include <stdlib.h>
#include <string.h>

nc_status bundle_cpu_layers_open(bundle_cpu_layers *c, const db_host *h,
                                 const model_family_row *family, const unsigned char *layers,
                                 int n_threads, nc_error *err) {
    memset(c, 0, sizeof *c);
    const lower_manifest *man = &h->man;
    c->n_layers = man->cfg.num_hidden_layers;
    c->ctx = man->ctx;
    c->layers = malloc((size_t)c->n_layers + 1);
    if (!c->layers) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    memcpy(c->layers, layers, (size_t)c->n_layers);
    for (int l = 0; l < c->n_layers; l++)
        c->n_cpu += layers[l] != 0;
    if (!family->open_decoder)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "the %s family has no CPU decoder",
                       family->title);
    /* fp32 caches: the CPU engine's own numbers */
    decoder_options o = {n_threads, 0};
    nc_status st = family->open_decoder(man->source_dir, &o, &c->d, err);
    c->open = 1; /* decoder_close frees what a failed open left */
    if (st) return st;
    if (!c->d.ops->layer_forward || !c->d.ops->layer_state_new)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "the %s decoder cannot run one layer",
                       family->title);
    const decoder_dims *a = &c->d.shape.dims, *b = &h->dims;
    if (a->layers != b->layers || a->hidden != b->hidden || a->heads != b->heads ||
        a->kv_heads != b->kv_heads || a->head_dim != b->head_dim ||
        a->intermediate != b->intermediate || a->n_linear != b->n_linear)
        return nc_fail(err, NC_ERR_FORMAT, "%s: the checkpoint is not the model of the bundle %s",
                       man->source_dir, h->dir);
    return NC_OK;
}

void bundle_cpu_layers_close(bundle_cpu_layers *c) {
    if (c->open) decoder_close(&c->d);
    free(c->layers);
    memset(c, 0, sizeof *c);
}

nc_status bundle_cpu_seq_init(bundle_cpu_seq *s, bundle_cpu_layers *c, nc_error *err) {
    memset(s, 0, sizeof *s);
    s->c = c;
    return c->d.ops->layer_state_new(c->d.model, c->ctx, c->layers, &s->state, err);
}

void bundle_cpu_seq_release(bundle_cpu_seq *s) {
    if (s->state) s->c->d.ops->state_free(s->state);
    s->state = NULL;
}

nc_status bundle_cpu_layer_run(void *seq, int layer, float *rows, int n, int p, nc_error *err) {
    bundle_cpu_seq *s = seq;
    const decoder *d = &s->c->d;
    NC_TRY(d->ops->layer_forward(d->model, s->state, layer, rows, n, p, err));
    if (s->hook) s->hook(s->hook_user, layer, rows, n, d->shape.dims.hidden);
    return NC_OK;
}
