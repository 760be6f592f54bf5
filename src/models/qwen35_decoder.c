/* Qwen3.5's hybrid decoder behind models/decoder.h: the operations wrap
 * qwen35.h (truncation keeps what the recurrent state allows: docs/qwen35.md);
 * a forward copies the items into qwen35_batch_items kept with the model. */
#include <stdlib.h>

#include "models/decoder.h"

typedef struct q35 {
    qwen35_model *m;
    qwen35_batch_item *items; /* reused every forward */
    int cap;
} q35;

static nc_status state_new(void *model, int ctx, void **out, nc_error *err) {
    qwen35_state *s;
    NC_TRY(qwen35_state_new(((q35 *)model)->m, ctx, &s, err));
    *out = s;
    return NC_OK;
}
static void state_free(void *s) {
    qwen35_state_free(s);
}
static int state_pos(const void *s) {
    return qwen35_state_pos(s);
}
static int state_ctx(const void *s) {
    return qwen35_state_ctx(s);
}
static int state_truncate(void *s, int n_keep) {
    return qwen35_state_truncate(s, n_keep);
}

static nc_status forward(void *model, const decoder_item *items, int n, nc_error *err) {
    q35 *q = model;
    if (n > q->cap) {
        qwen35_batch_item *p = realloc(q->items, (size_t)n * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "qwen35 decoder: out of memory for a step");
        q->items = p;
        q->cap = n;
    }
    for (int i = 0; i < n; i++)
        q->items[i] = (qwen35_batch_item){items[i].state, items[i].tokens, items[i].n,
                                          items[i].logits_last, items[i].logits_all};
    return qwen35_forward_batch(q->m, q->items, n, err);
}

static void set_layer_hook(void *model, qwen3_layer_hook hook, void *user) {
    qwen35_set_layer_hook(((q35 *)model)->m, hook, user);
}

static void model_free(void *model) {
    q35 *q = model;
    qwen35_free(q->m);
    free(q->items);
    free(q);
}

static void state_checkpoint(void *s) {
    qwen35_state_checkpoint(s);
}

static nc_status layer_state_new(void *model, int ctx, const unsigned char *layers, void **out,
                                 nc_error *err) {
    qwen35_state *s;
    NC_TRY(qwen35_state_new_layers(((q35 *)model)->m, ctx, layers, &s, err));
    *out = s;
    return NC_OK;
}
static nc_status layer_forward(void *model, void *state, int layer, float *rows, int n, int pos,
                               nc_error *err) {
    return qwen35_layer_forward(((q35 *)model)->m, state, layer, rows, n, pos, err);
}

static const decoder_ops ops = {.state_new = state_new,
                                .state_free = state_free,
                                .state_pos = state_pos,
                                .state_ctx = state_ctx,
                                .state_truncate = state_truncate,
                                .forward = forward,
                                .set_layer_hook = set_layer_hook,
                                .free = model_free,
                                .state_checkpoint = state_checkpoint,
                                .layer_state_new = layer_state_new,
                                .layer_forward = layer_forward};

nc_status qwen35_decoder_open(const char *dir, const decoder_options *o, decoder *d,
                              nc_error *err) {
    q35 *q = calloc(1, sizeof *q);
    if (!q) return nc_fail(err, NC_ERR_NOMEM, "qwen35 decoder: out of memory");
    d->ops = &ops;
    d->model = q;
    NC_TRY(qwen35_load(dir, o->n_threads, &q->m, err));
    if (o->kv_f16 >= 0) qwen35_model_set_kv_f16(q->m, o->kv_f16);
    const qwen35_config *c = qwen35_model_config(q->m);
    /* the KV bytes count only the full-attention layers (dims' n_linear) */
    decoder_shape_fill(&d->shape, qwen35_model_base(q->m), qwen35_dims(c),
                       c->max_position_embeddings, c->eos_token_ids, c->n_eos,
                       qwen35_model_dtype(q->m), qwen35_model_weight_bytes_per_token(q->m));
    return NC_OK;
}
