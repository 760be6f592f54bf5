/* The production engine: Qwen3 on the CPU (src/models/qwen3). One
 * qwen3_state per slot; a step is one qwen3_forward_batch over every busy
 * slot, so the slots' rows (one new token each, or a prompt chunk) share
 * each pass over the weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/qwen3.h"
#include "serve/serve_engine.h"

typedef struct q_engine {
    qwen3_model *m;
    qwen3_batch_item *items; /* one per busy slot, reused every step */
    int cap;
} q_engine;

static nc_status q_seq_new(serve_engine *e, int ctx, void **out, nc_error *err) {
    q_engine *q = e->impl;
    qwen3_state *s;
    NC_TRY(qwen3_state_new(q->m, ctx, &s, err));
    *out = s;
    return NC_OK;
}

static void q_seq_free(serve_engine *e, void *seq) {
    (void)e;
    qwen3_state_free(seq);
}

static int q_seq_pos(serve_engine *e, void *seq) {
    (void)e;
    return qwen3_state_pos(seq);
}

static void q_seq_truncate(serve_engine *e, void *seq, int n_keep) {
    (void)e;
    qwen3_state_truncate(seq, n_keep);
}

/* Items that cannot run (context full) fail alone and stay out of the
 * batch; the others go through qwen3_forward_batch together. */
static nc_status q_step(serve_engine *e, serve_step_item *items, int n_items, nc_error *err) {
    q_engine *q = e->impl;
    if (n_items > q->cap) {
        qwen3_batch_item *p = realloc(q->items, (size_t)n_items * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "qwen3 engine: out of memory for a step");
        q->items = p;
        q->cap = n_items;
    }
    int n = 0;
    for (int i = 0; i < n_items; i++) {
        serve_step_item *it = &items[i];
        qwen3_state *s = it->seq;
        it->status = NC_OK;
        if (it->n <= 0 || it->n > qwen3_state_ctx(s) - qwen3_state_pos(s)) {
            it->status = nc_fail(&it->err, NC_ERR_RANGE,
                                 "context full: %d tokens in the cache + %d new > %d",
                                 qwen3_state_pos(s), it->n, qwen3_state_ctx(s));
            continue;
        }
        q->items[n++] = (qwen3_batch_item){s, it->tokens, it->n, it->logits, NULL};
    }
    if (n == 0) return NC_OK;
    nc_error berr;
    if (qwen3_forward_batch(q->m, q->items, n, &berr) != NC_OK) {
        /* Checked up front by the engine: nothing changed; fail every item
         * that was in the batch with its message. */
        for (int i = 0; i < n_items; i++)
            if (items[i].status == NC_OK) {
                items[i].status = berr.code;
                items[i].err = berr;
            }
    }
    return NC_OK;
}

static void q_destroy(serve_engine *e) {
    q_engine *q = e->impl;
    if (q) {
        qwen3_free(q->m);
        free(q->items);
        free(q);
    }
    tok_free(e->tok);
    e->impl = NULL;
    e->tok = NULL;
}

nc_status serve_engine_open_qwen3(const char *dir, const serve_engine_options *opt,
                                  serve_engine *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    qwen3_load_options lo = {opt ? opt->n_threads : 0};
    q_engine *q = calloc(1, sizeof *q);
    if (!q) return nc_fail(err, NC_ERR_NOMEM, "qwen3 engine: out of memory");
    nc_status st = qwen3_load(dir, &lo, &q->m, err);
    if (st == NC_OK) st = tok_load(dir, &out->tok, err);
    if (st != NC_OK) {
        qwen3_free(q->m);
        free(q);
        return st;
    }
    const qwen3_config *c = qwen3_model_config(q->m);
    out->impl = q;
    out->kind = "qwen3-cpu";
    /* K and V, fp32, every layer (qwen3.h: the state's cache is fp32). */
    out->kv_bytes_per_token = 2 * sizeof(float) * (size_t)c->num_hidden_layers *
                              (size_t)c->num_key_value_heads * (size_t)c->head_dim;
    out->n_vocab = c->vocab_size;
    out->ctx_max = c->max_position_embeddings;
    if (opt && opt->ctx > 0 && opt->ctx < out->ctx_max) out->ctx_max = opt->ctx;
    serve_engine_set_eog(out, c->eos_token_ids, c->n_eos);
    serve_engine_set_id(out, dir);
    out->seq_new = q_seq_new;
    out->seq_free = q_seq_free;
    out->seq_pos = q_seq_pos;
    out->seq_truncate = q_seq_truncate;
    out->step = q_step;
    out->destroy = q_destroy;
    return NC_OK;
}
