/* Decision models in the public API (include/nectar.h, docs/decision.md):
 * the model of decision_open_backend and its folder's or bundle's tokenizer;
 * a call runs its rows as one padded batch through decision_forward. */
#include <stdlib.h>
#include <string.h>

#include "api/api_options.h"
#include "decide/decision_batch.h"
#include "decide/decision_bundle.h"
#include "nectar.h"
#include "text/tokenizer.h"

struct nc_decision_model {
    decision_model *m;
    tok_tokenizer *tok;
};

static const char *const OPEN_KEYS[] = {"threads", "ane_device", NULL};

NC_API nc_status nc_decision_open(const char *path, const char *backend,
                                  const char *const *options, nc_decision_model **out,
                                  nc_error *err) {
    if (!path || !out) return nc_fail(err, NC_ERR_INVALID, "nc_decision_open: NULL argument");
    *out = NULL;
    int threads = 0;
    NC_TRY(api_opt_check(options, OPEN_KEYS, "nc_decision_open", err));
    NC_TRY(api_opt_int(options, "threads", 0, 4096, &threads, "nc_decision_open", err));
    const char *dev = api_opt_get(options, "ane_device");
    nc_decision_model *d = calloc(1, sizeof *d);
    if (!d) return nc_fail(err, NC_ERR_NOMEM, "nc_decision_open: out of memory");
    nc_status st = decision_open_backend(path, backend ? backend : "cpu", dev ? dev : "real",
                                         "nc_decision_open", threads, &d->m, err);
    if (st == NC_OK) st = tok_load(path, &d->tok, err);
    if (st != NC_OK) {
        nc_decision_free(d);
        return st;
    }
    *out = d;
    return NC_OK;
}

NC_API void nc_decision_free(nc_decision_model *d) {
    if (!d) return;
    decision_free(d->m);
    if (d->tok) tok_free(d->tok);
    free(d);
}

NC_API int nc_decision_num_markers(const nc_decision_model *d) {
    return d ? decision_model_config(d->m)->num_markers : 0;
}

NC_API int nc_decision_num_actions(const nc_decision_model *d) {
    return d ? decision_model_config(d->m)->num_actions : 0;
}

NC_API const char *nc_decision_action_label(const nc_decision_model *d, int i) {
    if (!d || i < 0 || i >= nc_decision_num_actions(d)) return NULL;
    const decision_config *c = decision_model_config(d->m);
    return c->action_labels ? c->action_labels[i] : NULL;
}

/* One padded batch through the model. */
static nc_status run(nc_decision_model *d, const decision_batch *b, const int32_t *markers,
                     float *marker_probs, float *calibrated, float *action_probs, nc_error *err) {
    decision_io io = {.ids = b->ids, .mask = b->mask, .markers = markers, .batch = b->batch,
                      .seq = b->seq, .marker_probs = marker_probs, .calibrated = calibrated,
                      .action_probs = action_probs};
    return decision_forward(d->m, &io, err);
}

static nc_status check_call(const nc_decision_model *d, const void *rows, size_t n,
                            const char *what, nc_error *err) {
    if (!d || !rows) return nc_fail(err, NC_ERR_INVALID, "%s: NULL argument", what);
    if (n < 1 || n > (1u << 20))
        return nc_fail(err, NC_ERR_INVALID, "%s: %zu rows (1 to 1048576)", what, n);
    return NC_OK;
}

NC_API nc_status nc_decide(nc_decision_model *d, const char *const *texts, size_t n,
                           float *marker_probs, float *calibrated, float *action_probs,
                           nc_error *err) {
    NC_TRY(check_call(d, texts, n, "nc_decide", err));
    for (size_t i = 0; i < n; i++)
        if (!texts[i]) return nc_fail(err, NC_ERR_INVALID, "nc_decide: text %zu is NULL", i + 1);
    decision_batch b;
    const modernbert_config *enc = modernbert_model_config(decision_model_encoder(d->m));
    nc_status st = decision_batch_texts(d->tok, enc, texts, (int)n, 0, &b, err);
    if (st == NC_OK) st = run(d, &b, NULL, marker_probs, calibrated, action_probs, err);
    decision_batch_free(&b);
    if (st != NC_OK) nc_fail_prefix(err, "nc_decide");
    return st;
}

NC_API nc_status nc_decide_tokens(nc_decision_model *d, const int32_t *const *ids,
                                  const size_t *n_ids, const int32_t *markers, size_t n,
                                  float *marker_probs, float *calibrated, float *action_probs,
                                  nc_error *err) {
    NC_TRY(check_call(d, ids, n, "nc_decide_tokens", err));
    if (!n_ids) return nc_fail(err, NC_ERR_INVALID, "nc_decide_tokens: NULL argument");
    for (size_t i = 0; i < n; i++)
        if (!ids[i])
            return nc_fail(err, NC_ERR_INVALID, "nc_decide_tokens: row %zu is NULL", i + 1);
    decision_batch b;
    const modernbert_config *enc = modernbert_model_config(decision_model_encoder(d->m));
    nc_status st = decision_batch_rows(enc, ids, n_ids, (int)n, 0, &b, err);
    if (st == NC_OK) st = run(d, &b, markers, marker_probs, calibrated, action_probs, err);
    decision_batch_free(&b);
    if (st != NC_OK) nc_fail_prefix(err, "nc_decide_tokens");
    return st;
}
