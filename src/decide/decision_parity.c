/* The FP16 gate on the whole decision (decision_parity.h). */
#include "decide/decision_parity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct outs {
    float *z, *p, *q, *a, *layers;
} outs;

static void outs_free(outs *o) {
    free(o->z);
    free(o->p);
    free(o->q);
    free(o->a);
    free(o->layers);
}

static nc_status run(decision_model *m, const int32_t *ids, const int32_t *mask, int n, int seq,
                     int want_layers, outs *o, nc_error *err) {
    const decision_config *c = decision_model_config(m);
    size_t K = (size_t)c->num_markers, A = (size_t)c->num_actions, N = (size_t)n;
    size_t L = (size_t)modernbert_model_config(decision_model_encoder(m))->num_hidden_layers +
               (size_t)c->head_layers;
    memset(o, 0, sizeof *o);
    o->z = malloc(N * K * sizeof *o->z);
    o->p = malloc(N * K * sizeof *o->p);
    o->q = malloc(N * K * sizeof *o->q);
    o->a = malloc(N * A * sizeof *o->a);
    if (want_layers) o->layers = calloc(L * N * (size_t)seq * (size_t)c->hidden_size, sizeof(float));
    if (!o->z || !o->p || !o->q || !o->a || (want_layers && !o->layers))
        return nc_fail(err, NC_ERR_NOMEM, "parity: out of memory");
    decision_io io = {.ids = ids, .mask = mask, .batch = n, .seq = seq, .marker_logits = o->z,
                      .marker_probs = o->p, .calibrated = o->q, .action_probs = o->a,
                      .layers = o->layers};
    return decision_forward(m, &io, err);
}

static double max_diff(const float *a, const float *b, size_t n, int *finite) {
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) *finite = 0;
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= e)) e = isnan(d) ? INFINITY : d;
    }
    return e;
}

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

nc_status decision_parity_run(decision_model *ref, decision_model *cand, const int32_t *ids,
                              const int32_t *mask, int n, int seq, decision_parity_report *rep,
                              nc_error *err) {
    memset(rep, 0, sizeof *rep);
    const decision_config *c = decision_model_config(ref), *cc = decision_model_config(cand);
    if (c->num_markers != cc->num_markers || c->num_actions != cc->num_actions)
        return nc_fail(err, NC_ERR_FORMAT, "parity: the candidate is not the reference's model");
    int K = c->num_markers, A = c->num_actions, D = c->hidden_size;
    rep->n = n;
    rep->K = K;
    rep->A = A;
    rep->n_enc_layers = modernbert_model_config(decision_model_encoder(ref))->num_hidden_layers;
    rep->n_head_layers = c->head_layers;
    rep->temperature = c->temperature;
    int NL = rep->n_enc_layers + rep->n_head_layers;
    outs r = {0}, x = {0}, y = {0};
    nc_status st = run(ref, ids, mask, n, seq, 1, &r, err);
    if (st == NC_OK) st = run(cand, ids, mask, n, seq, 1, &x, err);
    if (st == NC_OK) st = run(cand, ids, mask, n, seq, 0, &y, err);
    rep->layer_err = calloc((size_t)NL, sizeof *rep->layer_err);
    rep->layer_scale = calloc((size_t)NL, sizeof *rep->layer_scale);
    rep->margin = calloc((size_t)n, sizeof *rep->margin);
    rep->delta = calloc((size_t)n, sizeof *rep->delta);
    if (st == NC_OK && (!rep->layer_err || !rep->layer_scale || !rep->margin || !rep->delta))
        st = nc_fail(err, NC_ERR_NOMEM, "parity: out of memory");
    if (st == NC_OK) {
        size_t nk = (size_t)n * K, na = (size_t)n * A;
        rep->finite = 1;
        rep->logit_err = max_diff(x.z, r.z, nk, &rep->finite);
        rep->drift_probs = max_diff(x.p, r.p, nk, &rep->finite);
        rep->drift_cal = max_diff(x.q, r.q, nk, &rep->finite);
        rep->drift_act = max_diff(x.a, r.a, na, &rep->finite);
        rep->deterministic = !memcmp(x.z, y.z, nk * sizeof *x.z) &&
                             !memcmp(x.a, y.a, na * sizeof *x.a) &&
                             !memcmp(x.q, y.q, nk * sizeof *x.q);
        for (int i = 0; i < n; i++) {
            const float *zr = r.z + (size_t)i * K;
            int b = argmax(zr, K);
            float second = -INFINITY;
            for (int k = 0; k < K; k++)
                if (k != b && zr[k] > second) second = zr[k];
            int fin = 1;
            rep->margin[i] = (double)zr[b] - (double)second;
            rep->delta[i] = max_diff(x.z + (size_t)i * K, zr, (size_t)K, &fin);
            rep->n_uncertified += !(rep->margin[i] > 2 * rep->delta[i]);
            rep->marker_misses += argmax(x.p + (size_t)i * K, K) != b;
            rep->action_misses += argmax(x.a + (size_t)i * A, A) != argmax(r.a + (size_t)i * A, A);
        }
        size_t per = (size_t)n * seq * D;
        for (int l = 0; l < NL; l++) {
            int fin = 1;
            rep->layer_err[l] = max_diff(x.layers + l * per, r.layers + l * per, per, &fin);
            for (size_t i = 0; i < per; i++)
                rep->layer_scale[l] = fmax(rep->layer_scale[l], fabs(r.layers[l * per + i]));
            if (!fin) rep->finite = 0;
        }
        rep->passed = rep->finite && rep->deterministic && !rep->marker_misses &&
                      !rep->action_misses && rep->drift_cal <= DECISION_GATE_DRIFT &&
                      rep->drift_act <= DECISION_GATE_DRIFT;
    }
    outs_free(&r);
    outs_free(&x);
    outs_free(&y);
    return st;
}

void decision_parity_print(const decision_parity_report *rep, FILE *f) {
    int ok_arg = !rep->marker_misses && !rep->action_misses;
    fprintf(f, "decision parity on %d inputs (K = %d markers, A = %d actions):\n", rep->n, rep->K,
            rep->A);
    fprintf(f, "  argmax agreement: markers %d/%d, actions %d/%d  [%s]\n", rep->n - rep->marker_misses,
            rep->n, rep->n - rep->action_misses, rep->n, ok_arg ? "pass" : "FAIL");
    fprintf(f, "  drift: calibrated %.3g, actions %.3g (gate <= %g)  [%s]; raw marker probs %.3g\n",
            rep->drift_cal, rep->drift_act, DECISION_GATE_DRIFT,
            rep->drift_cal <= DECISION_GATE_DRIFT && rep->drift_act <= DECISION_GATE_DRIFT ? "pass"
                                                                                          : "FAIL",
            rep->drift_probs);
    fprintf(f, "  finite: %s; deterministic over 2 runs: %s\n", rep->finite ? "yes" : "NO",
            rep->deterministic ? "yes" : "NO");
    fprintf(f,
            "  marker logits: max error delta %.3g; bound on the calibrated drift delta/(2T) = "
            "%.3g (T = %g)\n",
            rep->logit_err, rep->logit_err / (2 * rep->temperature), rep->temperature);
    fprintf(f, "  margin certificate top1 - top2 > 2 delta: %d/%d inputs certified\n",
            rep->n - rep->n_uncertified, rep->n);
    for (int i = 0; i < rep->n; i++)
        if (!(rep->margin[i] > 2 * rep->delta[i]))
            fprintf(f, "    input %d: margin %.3g <= 2 x %.3g: not certified\n", i + 1,
                    rep->margin[i], rep->delta[i]);
    fprintf(f, "  per-layer drift (max |candidate - reference| / max |reference|):\n");
    for (int l = 0; l < rep->n_enc_layers + rep->n_head_layers; l++)
        fprintf(f, "    %s %d: %.3g / %.3g\n", l < rep->n_enc_layers ? "encoder layer" : "head layer",
                l < rep->n_enc_layers ? l : l - rep->n_enc_layers, rep->layer_err[l],
                rep->layer_scale[l]);
    fprintf(f, "gate: %s\n", rep->passed ? "PASS" : "FAIL");
}

void decision_parity_report_free(decision_parity_report *rep) {
    free(rep->layer_err);
    free(rep->layer_scale);
    free(rep->margin);
    free(rep->delta);
    memset(rep, 0, sizeof *rep);
}
