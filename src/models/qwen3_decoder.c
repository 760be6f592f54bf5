/* Qwen3's (and Llama's) decoder behind models/decoder.h: the operations
 * wrap qwen3.h; a forward copies the items into qwen3_batch_items kept
 * with the model. */
#include <stdlib.h>

#include "models/decoder.h"

typedef struct q3 {
    qwen3_model *m;
    qwen3_batch_item *items; /* reused every forward */
    int cap;
} q3;

static nc_status state_new(void *model, int ctx, void **out, nc_error *err) {
    qwen3_state *s;
    NC_TRY(qwen3_state_new(((q3 *)model)->m, ctx, &s, err));
    *out = s;
    return NC_OK;
}
static void state_free(void *s) {
    qwen3_state_free(s);
}
static int state_pos(const void *s) {
    return qwen3_state_pos(s);
}
static int state_ctx(const void *s) {
    return qwen3_state_ctx(s);
}
static int state_truncate(void *s, int n_keep) {
    qwen3_state_truncate(s, n_keep);
    return qwen3_state_pos(s);
}

static nc_status forward(void *model, const decoder_item *items, int n, nc_error *err) {
    q3 *q = model;
    if (n > q->cap) {
        qwen3_batch_item *p = realloc(q->items, (size_t)n * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "qwen3 decoder: out of memory for a step");
        q->items = p;
        q->cap = n;
    }
    for (int i = 0; i < n; i++)
        q->items[i] = (qwen3_batch_item){items[i].state, items[i].tokens, items[i].n,
                                         items[i].logits_last, items[i].logits_all};
    return qwen3_forward_batch(q->m, q->items, n, err);
}

static void set_layer_hook(void *model, qwen3_layer_hook hook, void *user) {
    qwen3_set_layer_hook(((q3 *)model)->m, hook, user);
}

static void model_free(void *model) {
    q3 *q = model;
    qwen3_free(q->m);
    free(q->items);
    free(q);
}

static nc_status layer_state_new(void *model, int ctx, const unsigned char *layers, void **out,
                                 nc_error *err) {
    qwen3_state *s;
    NC_TRY(qwen3_state_new_layers(((q3 *)model)->m, ctx, layers, &s, err));
    *out = s;
    return NC_OK;
}
static nc_status layer_forward(void *model, void *state, int layer, float *rows, int n, int pos,
                               nc_error *err) {
    return qwen3_layer_forward(((q3 *)model)->m, state, layer, rows, n, pos, err);
}

static const decoder_ops ops = {.state_new = state_new,
                                .state_free = state_free,
                                .state_pos = state_pos,
                                .state_ctx = state_ctx,
                                .state_truncate = state_truncate,
                                .forward = forward,
                                .set_layer_hook = set_layer_hook,
                                .free = model_free,
                                .layer_state_new = layer_state_new,
                                .layer_forward = layer_forward};

nc_status qwen3_decoder_open(const char *dir, const decoder_options *o, decoder *d, nc_error *err) {
    q3 *q = calloc(1, sizeof *q);
    if (!q) return nc_fail(err, NC_ERR_NOMEM, "qwen3 decoder: out of memory");
    d->ops = &ops;
    d->model = q;
    NC_TRY(qwen3_load(dir, &(qwen3_load_options){o->n_threads}, &q->m, err));
    if (o->kv_f16 >= 0) qwen3_model_set_kv_f16(q->m, o->kv_f16);
    const qwen3_config *c = qwen3_model_config(q->m);
    decoder_shape_fill(&d->shape, qwen3_model_base(q->m), qwen3_dims(c), c->max_position_embeddings,
                       c->eos_token_ids, c->n_eos, qwen3_model_dtype(q->m),
                       qwen3_model_weight_bytes_per_token(q->m));
    return NC_OK;
}

nc_status qwen3_decoder_open_layers(const char *config_dir, const qwen3_tensor_source *src,
                                    const unsigned char *layers, int n_threads, decoder *d,
                                    nc_error *err) {
    q3 *q = calloc(1, sizeof *q);
    if (!q) return nc_fail(err, NC_ERR_NOMEM, "qwen3 decoder: out of memory");
    d->ops = &ops;
    d->model = q;
    NC_TRY(qwen3_load_layers(config_dir, src, layers, n_threads, &q->m, err));
    const qwen3_config *c = qwen3_model_config(q->m);
    d->shape.dims = qwen3_dims(c);
    d->shape.ctx_max = c->max_position_embeddings;
    d->shape.dtype = "f16";
    d->shape.n_threads = qwen3_model_threads(q->m);
    return NC_OK;
}
