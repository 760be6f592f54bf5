/* decide:BACKEND:PATH, a decision model (docs/decision.md) as a candidate
 * of `nectar bench --compare`. Load = the model (decision_open_backend)
 * and its tokenizer; a decision = the item's lines (a Snake tick: three
 * texts) tokenized, padded to the study's fixed L (64 or 96, the smaller
 * that holds every row; longer rows: the longest), one forward pass, and
 * each row's most likely action. Tokenization and the copies between the
 * engines are inside the decision, as the study asks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/candidate.h"
#include "decide/decision_batch.h"
#include "decide/decision_bundle.h"

#define MAX_ROWS 64

typedef struct decide_impl {
    char backend[16], device[16], path[1024];
    decision_model *m;
    tok_tokenizer *tok;
    float *act;
} decide_impl;

static nc_status decide_load(nc_candidate *c, nc_error *err) {
    decide_impl *d = c->impl;
    NC_TRY(decision_open_backend(d->path, d->backend, d->device, "decide candidate", 0, &d->m,
                                 err));
    NC_TRY(tok_load(d->path, &d->tok, err));
    d->act = malloc((size_t)MAX_ROWS * (size_t)decision_model_config(d->m)->num_actions *
                    sizeof *d->act);
    return d->act ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "decide candidate: out of memory");
}

/* The study's fixed length for rows of at most `longest` tokens. */
static int study_seq(size_t longest) {
    return longest <= 64 ? 64 : longest <= 96 ? 96 : (int)longest;
}

static nc_status decide_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    decide_impl *d = c->impl;
    int32_t *rows[MAX_ROWS] = {NULL};
    size_t lens[MAX_ROWS], longest = 0;
    int n = 0;
    nc_status st = NC_OK;
    for (const char *p = item->data, *end = item->data + item->len; p < end && st == NC_OK;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = (size_t)((nl ? nl : end) - p);
        if (n == MAX_ROWS)
            st = nc_fail(err, NC_ERR_RANGE, "decide candidate: more than %d lines in an item",
                         MAX_ROWS);
        else if ((st = tok_encode_special(d->tok, p, l, &rows[n], &lens[n], err)) == NC_OK &&
                 lens[n] > longest)
            longest = lens[n];
        n += st == NC_OK;
        p += l + 1;
    }
    if (st == NC_OK && n == 0) st = nc_fail(err, NC_ERR_INVALID, "decide candidate: an empty item");
    decision_batch b = {0};
    const modernbert_config *enc = modernbert_model_config(decision_model_encoder(d->m));
    if (st == NC_OK)
        st = decision_batch_rows(enc, (const int32_t *const *)rows, lens, n, study_seq(longest),
                                 &b, err);
    decision_io io = {.ids = b.ids, .mask = b.mask, .batch = n, .seq = b.seq,
                      .action_probs = d->act};
    if (st == NC_OK) st = decision_forward(d->m, &io, err);
    decision_batch_free(&b);
    for (int i = 0; i < n; i++)
        free(rows[i]);
    return st; /* the actions are the decision; their values are judged by `nectar snake` */
}

static void decide_unload(nc_candidate *c) {
    decide_impl *d = c->impl;
    if (!d) return;
    decision_free(d->m);
    if (d->tok) tok_free(d->tok);
    free(d->act);
    free(d);
    c->impl = NULL;
}

static const nc_candidate_ops decide_ops = {decide_load, NULL, decide_run, decide_unload};

nc_status nc_candidate_decide_init(nc_candidate *c, const char *arg, nc_error *err) {
    static const char *const backends[] = {"cpu", "mil", "ane", "ane-fake"};
    const char *colon = strchr(arg, ':');
    decide_impl *d = calloc(1, sizeof *d);
    if (!d) return nc_fail(err, NC_ERR_NOMEM, "decide candidate: out of memory");
    c->impl = d;
    c->ops = &decide_ops; /* unload frees d on a failure below too */
    size_t k = colon ? (size_t)(colon - arg) : 0;
    int known = 0;
    for (size_t i = 0; colon && i < sizeof backends / sizeof backends[0]; i++)
        known |= strlen(backends[i]) == k && !strncmp(backends[i], arg, k);
    if (!known || !colon[1] || strlen(colon + 1) >= sizeof d->path)
        return nc_fail(err, NC_ERR_INVALID,
                       "candidate 'decide:%s': expected decide:BACKEND:PATH, BACKEND cpu, mil, "
                       "ane or ane-fake",
                       arg);
    int fake = k == 8; /* "ane-fake" */
    snprintf(d->backend, sizeof d->backend, "%.*s", fake ? 3 : (int)k, arg);
    snprintf(d->device, sizeof d->device, "%s", fake ? "fake" : "real");
    snprintf(d->path, sizeof d->path, "%s", colon + 1);
    return NC_OK;
}
