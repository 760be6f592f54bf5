/* The CPU engine of every decoder family (qwen3-cpu, qwen35-cpu,
 * llama-cpu): the family row's decoder (models/decoder.h) behind the
 * engine seam. A sequence is the decoder's state; a step is one forward
 * over every item that fits, so the sequences' rows (one new token each,
 * or a prompt chunk) share each pass over the weights. */
#include <stdlib.h>

#include "engine/engines.h"
#include "models/decoder.h"

typedef struct cpu_engine {
    decoder d;
    decoder_item *items; /* reused every step */
    int cap;
    engine_ops ops; /* cpu_ops, less the layer hook where the decoder has none */
} cpu_engine;

static nc_status cpu_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    cpu_engine *q = e->impl;
    if (ctx <= 0 || ctx > e->ctx_max) ctx = e->ctx_max;
    void *s;
    NC_TRY(q->d.ops->state_new(q->d.model, ctx, &s, err));
    *out = s;
    return NC_OK;
}

static void cpu_seq_free(engine *e, engine_seq *s) {
    ((cpu_engine *)e->impl)->d.ops->state_free(s);
}

static int cpu_seq_pos(const engine *e, const engine_seq *s) {
    return ((const cpu_engine *)e->impl)->d.ops->state_pos(s);
}

static int cpu_seq_truncate(engine *e, engine_seq *s, int n_keep) {
    return ((cpu_engine *)e->impl)->d.ops->state_truncate(s, n_keep);
}

/* Items that cannot run (context full) fail alone and stay out of the
 * forward; the others go through it together. */
static nc_status cpu_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    cpu_engine *q = e->impl;
    const decoder_ops *ops = q->d.ops;
    if (n_items > q->cap) {
        decoder_item *p = realloc(q->items, (size_t)n_items * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "%s engine: out of memory for a step", e->kind);
        q->items = p;
        q->cap = n_items;
    }
    int n = 0;
    for (int i = 0; i < n_items; i++) {
        engine_step_item *it = &items[i];
        int pos = ops->state_pos(it->seq), ctx = ops->state_ctx(it->seq);
        it->status = NC_OK;
        if (it->n > ctx - pos) {
            it->status = nc_fail(&it->err, NC_ERR_RANGE,
                                 "context full: %d tokens in the cache + %d new > context of %d "
                                 "tokens",
                                 pos, it->n, ctx);
            continue;
        }
        q->items[n++] = it->logits_all
                            ? (decoder_item){it->seq, it->tokens, it->n, NULL, it->logits}
                            : (decoder_item){it->seq, it->tokens, it->n, it->logits, NULL};
    }
    if (n == 0) return NC_OK;
    nc_error berr = {0};
    if (ops->forward(q->d.model, q->items, n, &berr) != NC_OK) {
        /* checked up front by the decoder: nothing changed; every item that
         * was in the forward fails with its message */
        for (int i = 0; i < n_items; i++)
            if (items[i].status == NC_OK) {
                items[i].status = berr.code;
                items[i].err = berr;
            }
    }
    return NC_OK;
}

static void cpu_set_hook(engine *e, engine_layer_hook hook, void *user) {
    cpu_engine *q = e->impl;
    q->d.ops->set_layer_hook(q->d.model, hook, user);
}

static void cpu_checkpoint(engine *e, engine_seq *s) {
    ((cpu_engine *)e->impl)->d.ops->state_checkpoint(s);
}

static void cpu_close(engine *e) {
    cpu_engine *q = e->impl;
    if (!q) return;
    decoder_close(&q->d);
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
    .seq_checkpoint = cpu_checkpoint,
};

nc_status engine_open_decoder_cpu(const char *dir, const engine_options *opt, engine *e,
                                  nc_error *err) {
    if (!e->family->open_decoder)
        return nc_fail(err, NC_ERR_INTERNAL, "%s: the %s family has no CPU decoder", dir,
                       e->family->title);
    cpu_engine *q = calloc(1, sizeof *q);
    if (!q) return nc_fail(err, NC_ERR_NOMEM, "%s engine: out of memory", e->kind);
    e->impl = q;
    q->ops = cpu_ops;
    e->ops = &q->ops;
    decoder_options o = {opt->n_threads, opt->kv == ENGINE_KV_DEFAULT ? -1
                                         : opt->kv == ENGINE_KV_F16   ? 1
                                                                      : 0};
    NC_TRY(e->family->open_decoder(dir, &o, &q->d, err));
    if (!q->d.ops->set_layer_hook) q->ops.set_layer_hook = NULL;
    if (!q->d.ops->state_checkpoint) q->ops.seq_checkpoint = NULL;
    e->has_logits_all = 1;
    const decoder_shape *s = &q->d.shape;
    e->dims = s->dims;
    e->n_vocab = s->dims.vocab;
    e->ctx_max = s->ctx_max;
    if (opt->ctx > 0 && opt->ctx < e->ctx_max) e->ctx_max = opt->ctx;
    e->n_layers = s->dims.layers;
    e->hidden = s->dims.hidden;
    e->is_kv_f16 = s->kv_f16;
    e->kv_bytes_per_token = s->kv_bytes_per_token;
    e->weight_dtype = s->dtype;
    e->weight_bytes_per_token = s->weight_bytes_per_token;
    e->weights_residency = s->weights_residency;
    e->n_threads = s->n_threads;
    engine_set_eos(e, s->eos_ids, s->n_eos);
    return NC_OK;
}
