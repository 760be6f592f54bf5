/* The production engine: Qwen3 on the CPU (src/models/qwen3). One
 * qwen3_state per slot. qwen3_forward runs one sequence at a time, so a
 * step runs its slots' forwards one after another: correct, and a prompt
 * chunk is batched within its sequence, but decode steps do not yet share
 * one pass over the weights across slots (that needs a multi-sequence
 * forward in the engine). */
#include <stdio.h>
#include <string.h>

#include "models/qwen3.h"
#include "serve/serve_engine.h"

static nc_status q_seq_new(serve_engine *e, int ctx, void **out, nc_error *err) {
    qwen3_state *s;
    NC_TRY(qwen3_state_new(e->impl, ctx, &s, err));
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

static nc_status q_step(serve_engine *e, serve_step_item *items, int n_items, nc_error *err) {
    (void)err;
    for (int i = 0; i < n_items; i++)
        items[i].status = qwen3_forward(e->impl, items[i].seq, items[i].tokens, items[i].n,
                                        items[i].logits, NULL, &items[i].err);
    return NC_OK;
}

static void q_destroy(serve_engine *e) {
    qwen3_free(e->impl);
    tok_free(e->tok);
    e->impl = NULL;
    e->tok = NULL;
}

nc_status serve_engine_open_qwen3(const char *dir, const serve_engine_options *opt,
                                  serve_engine *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    qwen3_load_options lo = {opt ? opt->n_threads : 0};
    qwen3_model *m;
    NC_TRY(qwen3_load(dir, &lo, &m, err));
    nc_status st = tok_load(dir, &out->tok, err);
    if (st != NC_OK) {
        qwen3_free(m);
        return st;
    }
    const qwen3_config *c = qwen3_model_config(m);
    out->impl = m;
    out->kind = "qwen3-cpu";
    out->n_vocab = c->vocab_size;
    out->ctx_max = c->max_position_embeddings;
    if (opt && opt->ctx > 0 && opt->ctx < out->ctx_max) out->ctx_max = opt->ctx;
    for (int i = 0; i < c->n_eos && out->n_eog < SERVE_MAX_EOG; i++)
        out->eog[out->n_eog++] = c->eos_token_ids[i];
    /* Chat turns end with <|im_end|> even when the config names another eos. */
    const char *names[] = {"<|im_end|>", "<|endoftext|>"};
    for (int k = 0; k < 2; k++) {
        int32_t id = tok_find(out->tok, names[k]);
        if (id >= 0 && !serve_engine_is_eog(out, id) && out->n_eog < SERVE_MAX_EOG)
            out->eog[out->n_eog++] = id;
    }
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/') b--;
    snprintf(out->model_id, sizeof out->model_id, "%.*s", (int)(n - b), dir + b);
    out->seq_new = q_seq_new;
    out->seq_free = q_seq_free;
    out->seq_pos = q_seq_pos;
    out->seq_truncate = q_seq_truncate;
    out->step = q_step;
    out->destroy = q_destroy;
    return NC_OK;
}
