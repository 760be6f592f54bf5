/* qwen35-cpu: Qwen3.5 (Gated DeltaNet + gated attention) on the CPU
 * (src/models/qwen35). A sequence is a qwen35_state (KV cache of the full
 * layers, conv and delta-rule state of the linear ones); a step is one
 * qwen35_forward_batch over every item. Truncation keeps exactly n_keep:
 * the state replays what the recurrent state cannot rewind (from its
 * snapshot or from the start) within the next step, so the pipeline's
 * prefix reuse works unchanged (docs/qwen35.md). */
#include <stdlib.h>

#include "engine/engines.h"
#include "models/qwen35.h"

typedef struct q35_engine {
    qwen35_model *m;
    qwen35_batch_item *items; /* reused every step */
    int cap;
    qwen3_config shape; /* the Qwen3-family shape fields callers read (bench) */
} q35_engine;

static nc_status q35_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    q35_engine *q = e->impl;
    if (ctx <= 0 || ctx > e->ctx_max) ctx = e->ctx_max;
    qwen35_state *s;
    NC_TRY(qwen35_state_new(q->m, ctx, &s, err));
    *out = (engine_seq *)s;
    return NC_OK;
}

static void q35_seq_free(engine *e, engine_seq *s) {
    (void)e;
    qwen35_state_free((qwen35_state *)s);
}

static int q35_seq_pos(const engine *e, const engine_seq *s) {
    (void)e;
    return qwen35_state_pos((const qwen35_state *)s);
}

static int q35_seq_truncate(engine *e, engine_seq *s, int n_keep) {
    (void)e;
    return qwen35_state_truncate((qwen35_state *)s, n_keep);
}

/* Items that cannot run (context full) fail alone; the others share one
 * qwen35_forward_batch. */
static nc_status q35_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    q35_engine *q = e->impl;
    if (n_items > q->cap) {
        qwen35_batch_item *p = realloc(q->items, (size_t)n_items * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "qwen35 engine: out of memory for a step");
        q->items = p;
        q->cap = n_items;
    }
    int n = 0;
    for (int i = 0; i < n_items; i++) {
        engine_step_item *it = &items[i];
        qwen35_state *s = (qwen35_state *)it->seq;
        it->status = NC_OK;
        int pos = qwen35_state_pos(s), ctx = qwen35_state_ctx(s);
        if (it->n > ctx - pos) {
            it->status = nc_fail(&it->err, NC_ERR_RANGE,
                                 "context full: %d tokens in the cache + %d new > context of %d "
                                 "tokens",
                                 pos, it->n, ctx);
            continue;
        }
        q->items[n++] = (qwen35_batch_item){s, it->tokens, it->n, it->logits, NULL};
    }
    if (n == 0) return NC_OK;
    nc_error berr = {0};
    if (qwen35_forward_batch(q->m, q->items, n, &berr) != NC_OK)
        for (int i = 0; i < n_items; i++) /* checked up front: nothing changed */
            if (items[i].status == NC_OK) {
                items[i].status = berr.code;
                items[i].err = berr;
            }
    return NC_OK;
}

static void q35_close(engine *e) {
    q35_engine *q = e->impl;
    if (!q) return;
    qwen35_free(q->m);
    free(q->items);
    free(q);
    e->impl = NULL;
}

static const engine_ops q35_ops = {
    .seq_new = q35_seq_new,
    .seq_free = q35_seq_free,
    .seq_pos = q35_seq_pos,
    .seq_truncate = q35_seq_truncate,
    .step = q35_step,
    .close = q35_close,
};

nc_status engine_open_qwen35_cpu(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err) {
    q35_engine *q = calloc(1, sizeof *q);
    if (!q) return nc_fail(err, NC_ERR_NOMEM, "qwen35 engine: out of memory");
    e->impl = q;
    e->ops = &q35_ops;
    NC_TRY(qwen35_load(dir, opt->n_threads, &q->m, err));
    if (opt->kv != ENGINE_KV_DEFAULT) qwen35_model_set_kv_f16(q->m, opt->kv == ENGINE_KV_F16);
    const qwen35_config *c = qwen35_model_config(q->m);
    qwen35_config_shape(c, &q->shape);
    e->qwen3 = &q->shape;
    e->qwen35 = c;
    e->n_vocab = c->vocab_size;
    e->ctx_max = c->max_position_embeddings;
    if (opt->ctx > 0 && opt->ctx < e->ctx_max) e->ctx_max = opt->ctx;
    e->n_layers = c->num_hidden_layers;
    e->hidden = c->hidden_size;
    e->is_kv_f16 =
        opt->kv == ENGINE_KV_F16 || (opt->kv == ENGINE_KV_DEFAULT && qwen35_model_kv_f16(q->m));
    /* only the full-attention layers keep K and V per token */
    e->kv_bytes_per_token = 2 * (e->is_kv_f16 ? 2 : sizeof(float)) * (size_t)c->n_full *
                            (size_t)c->num_key_value_heads * (size_t)c->head_dim;
    e->weight_dtype = qwen35_model_dtype(q->m);
    e->weight_bytes_per_token = qwen35_model_weight_bytes_per_token(q->m);
    e->n_threads = qwen35_model_threads(q->m);
    engine_set_eos(e, c->eos_token_ids, c->n_eos);
    return NC_OK;
}
