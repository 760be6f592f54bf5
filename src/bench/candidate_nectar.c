/* In-process nectar backends as candidates.
 * cpu:DIR  Qwen3 on the cpu engine. Load = tokenizer + weights + one state;
 *          a decision = tokenize the item, prefill it from an empty cache and
 *          take the argmax of the last logits (tokenization is inside the
 *          decision: it is part of answering a request).
 * mil:BUNDLE  the MIL interpreter has no model-level entry point yet, so it
 *          is refused at open with a clear message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/candidate.h"
#include "models/qwen3.h"
#include "text/tokenizer.h"

typedef struct cpu_impl {
    char dir[1024];
    qwen3_model *model;
    qwen3_state *state;
    tok_tokenizer *tok;
    float *logits;
    int vocab;
} cpu_impl;

static nc_status cpu_load(nc_candidate *c, nc_error *err) {
    cpu_impl *m = c->impl;
    NC_TRY(tok_load(m->dir, &m->tok, err));
    NC_TRY(qwen3_load(m->dir, NULL, &m->model, err));
    NC_TRY(qwen3_state_new(m->model, 0, &m->state, err));
    m->vocab = qwen3_model_config(m->model)->vocab_size;
    m->logits = malloc((size_t)m->vocab * sizeof *m->logits);
    if (!m->logits) return nc_fail(err, NC_ERR_NOMEM, "cpu candidate: out of memory");
    return NC_OK;
}

static nc_status cpu_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    cpu_impl *m = c->impl;
    int32_t *ids = NULL;
    size_t n = 0;
    NC_TRY(tok_encode(m->tok, item->data, item->len, &ids, &n, err));
    if (n == 0) {
        free(ids);
        return nc_fail(err, NC_ERR_INVALID, "cpu candidate: an empty prompt has no next token");
    }
    qwen3_state_truncate(m->state, 0);
    nc_status st = qwen3_forward(m->model, m->state, ids, (int)n, m->logits, NULL, err);
    free(ids);
    NC_TRY(st);
    int best = 0;
    for (int i = 1; i < m->vocab; i++)
        if (m->logits[i] > m->logits[best]) best = i;
    (void)best; /* the decision; its value is not judged here */
    return NC_OK;
}

static void cpu_unload(nc_candidate *c) {
    cpu_impl *m = c->impl;
    if (!m) return;
    free(m->logits);
    if (m->state) qwen3_state_free(m->state);
    if (m->model) qwen3_free(m->model);
    if (m->tok) tok_free(m->tok);
    free(m);
    c->impl = NULL;
}

static const nc_candidate_ops cpu_ops = {cpu_load, NULL, cpu_run, cpu_unload};

nc_status nc_candidate_nectar_init(nc_candidate *c, const char *kind, const char *arg,
                                   nc_error *err) {
    if (!strcmp(kind, "mil"))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "candidate '%s': the mil backend is not available as a bench candidate yet "
                       "(no model-level MIL entry point); use cpu:DIR or an external command",
                       c->spec);
    if (!*arg)
        return nc_fail(err, NC_ERR_INVALID, "candidate '%s': cpu:DIR needs a model folder",
                       c->spec);
    if (strlen(arg) >= sizeof((cpu_impl *)0)->dir)
        return nc_fail(err, NC_ERR_RANGE, "candidate '%s': path too long", c->spec);
    cpu_impl *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "candidate: out of memory");
    snprintf(m->dir, sizeof m->dir, "%s", arg);
    c->impl = m;
    c->ops = &cpu_ops;
    NC_TRY(nc_candidate_set_model(c, arg, err));
    return NC_OK;
}
