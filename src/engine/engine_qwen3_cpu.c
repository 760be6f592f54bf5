/* qwen3-cpu: Qwen3 on the CPU (src/models/qwen3). A sequence is a
 * qwen3_state; a step is one qwen3_forward_batch over every item, so the
 * sequences' rows (one new token each, or a prompt chunk) share each pass
 * over the weights. */
#include <stdlib.h>

#include "engine/engines.h"

typedef struct cpu_engine {
    qwen3_model *m;
    qwen3_batch_item *items; /* reused every step */
    int cap;
} cpu_engine;

static nc_status cpu_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    cpu_engine *q = e->impl;
    if (ctx <= 0 || ctx > e->ctx_max) ctx = e->ctx_max;
    qwen3_state *s;
    NC_TRY(qwen3_state_new(q->m, ctx, &s, err));
    *out = (engine_seq *)s;
    return NC_OK;
}

static void cpu_seq_free(engine *e, engine_seq *s) {
    (void)e;
    qwen3_state_free((qwen3_state *)s);
}

static int cpu_seq_pos(const engine *e, const engine_seq *s) {
    (void)e;
    return qwen3_state_pos((const qwen3_state *)s);
}

static int cpu_seq_truncate(engine *e, engine_seq *s, int n_keep) {
    (void)e;
    qwen3_state_truncate((qwen3_state *)s, n_keep);
    return qwen3_state_pos((const qwen3_state *)s);
}

/* Items that cannot run (context full) fail alone and stay out of the
 * batch; the others go through qwen3_forward_batch together. */
static nc_status cpu_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    cpu_engine *q = e->impl;
    if (n_items > q->cap) {
        qwen3_batch_item *p = realloc(q->items, (size_t)n_items * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "qwen3 engine: out of memory for a step");
        q->items = p;
        q->cap = n_items;
    }
    int n = 0;
    for (int i = 0; i < n_items; i++) {
        engine_step_item *it = &items[i];
        qwen3_state *s = (qwen3_state *)it->seq;
        it->status = NC_OK;
        if (it->n > qwen3_state_ctx(s) - qwen3_state_pos(s)) {
            it->status = nc_fail(&it->err, NC_ERR_RANGE,
                                 "context full: %d tokens in the cache + %d new > context of %d "
                                 "tokens",
                                 qwen3_state_pos(s), it->n, qwen3_state_ctx(s));
            continue;
        }
        q->items[n++] = (qwen3_batch_item){s, it->tokens, it->n, it->logits, NULL};
    }
    if (n == 0) return NC_OK;
    nc_error berr = {0};
    if (qwen3_forward_batch(q->m, q->items, n, &berr) != NC_OK) {
        /* checked up front by the model: nothing changed; every item that
         * was in the batch fails with its message */
        for (int i = 0; i < n_items; i++)
            if (items[i].status == NC_OK) {
                items[i].status = berr.code;
                items[i].err = berr;
            }
    }
    return NC_OK;
}

static void cpu_set_hook(engine *e, engine_layer_hook hook, void *user) {
    qwen3_set_layer_hook(((cpu_engine *)e->impl)->m, hook, user);
}

static void cpu_close(engine *e) {
    cpu_engine *q = e->impl;
    if (!q) return;
    qwen3_free(q->m);
    free(q->items);
    free(q);
    e->impl = NULL;
}

static const engine_ops cpu_ops = {
    .seq_new = cpu_seq_new,
    .seq_free = cpu_seq_free,
    .seq_pos = cpu_seq_pos,
    .seq_truncate = cpu_seq_truncate,
    .step = cpu_step,
    .set_layer_hook = cpu_set_hook,
    .close = cpu_close,
};

nc_status engine_open_qwen3_cpu(const char *dir, const engine_options *opt, engine *e,
                                nc_error *err) {
    cpu_engine *q = calloc(1, sizeof *q);
    if (!q) return nc_fail(err, NC_ERR_NOMEM, "qwen3 engine: out of memory");
    e->impl = q;
    e->ops = &cpu_ops;
    qwen3_load_options lo = {opt->n_threads};
    NC_TRY(qwen3_load(dir, &lo, &q->m, err));
    if (opt->kv != ENGINE_KV_DEFAULT) qwen3_model_set_kv_f16(q->m, opt->kv == ENGINE_KV_F16);
    const qwen3_config *c = qwen3_model_config(q->m);
    e->qwen3 = c;
    e->n_vocab = c->vocab_size;
    e->ctx_max = c->max_position_embeddings;
    if (opt->ctx > 0 && opt->ctx < e->ctx_max) e->ctx_max = opt->ctx;
    e->n_layers = c->num_hidden_layers;
    e->hidden = c->hidden_size;
    e->is_kv_f16 = qwen3_model_kv_f16(q->m);
    e->kv_bytes_per_token = 2 * (e->is_kv_f16 ? 2 : sizeof(float)) * (size_t)c->num_hidden_layers *
                            (size_t)c->num_key_value_heads * (size_t)c->head_dim;
    e->weight_dtype = qwen3_model_dtype(q->m);
    e->weight_bytes_per_token = qwen3_model_weight_bytes_per_token(q->m);
    e->n_threads = qwen3_model_threads(q->m);
    engine_set_eos(e, c->eos_token_ids, c->n_eos);
    return NC_OK;
}
