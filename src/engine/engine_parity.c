/* The parity gate (engine_parity.h): both encoder engines on the same
 * padded batch, then the statistics, all in double precision. */
#include "engine/engine_parity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_out {
    float *hidden, *logits, *pooled;
} run_out;

static void out_free(run_out *o) {
    free(o->hidden);
    free(o->logits);
    free(o->pooled);
    memset(o, 0, sizeof *o);
}

typedef struct gate {
    const modernbert_config *c;
    engine_parity_kind kind;
    int n, seq, width; /* width: logits per decision row (V, labels) or D */
    size_t n_hidden, n_rows;
    int *rows; /* MLM: flat positions of real tokens */
    modernbert_io io;
} gate;

static nc_status out_alloc(const gate *g, run_out *o, nc_error *err) {
    memset(o, 0, sizeof *o);
    o->hidden = malloc(g->n_hidden * sizeof *o->hidden);
    if (g->kind == ENGINE_PARITY_EMBEDDING)
        o->pooled = malloc((size_t)g->n * g->width * sizeof *o->pooled);
    else
        o->logits = malloc(g->n_rows * g->width * sizeof *o->logits);
    if (!o->hidden || (!o->pooled && !o->logits)) {
        out_free(o);
        return nc_fail(err, NC_ERR_NOMEM, "parity: out of memory");
    }
    return NC_OK;
}

static modernbert_io io_for(const gate *g, run_out *o) {
    modernbert_io io = g->io;
    io.hidden = o->hidden;
    if (g->kind == ENGINE_PARITY_MLM) io.mlm_logits = o->logits;
    if (g->kind == ENGINE_PARITY_CLASSIFIER) io.cls_logits = o->logits;
    if (g->kind == ENGINE_PARITY_EMBEDDING) io.pooled = o->pooled;
    return io;
}

static int all_finite(const float *v, size_t n) {
    for (size_t i = 0; v && i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

static int same(const float *a, const float *b, size_t n) {
    return !a || !memcmp(a, b, n * sizeof *a);
}

static void top2(const float *v, int n, int *arg, double *margin) {
    int a = 0;
    double best = -INFINITY, second = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (v[i] > best) {
            second = best;
            best = v[i];
            a = i;
        } else if (v[i] > second)
            second = v[i];
    }
    *arg = a;
    *margin = n > 1 ? best - second : INFINITY;
}

static void softmax(const float *v, int n, double *p) {
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < n; i++)
        mx = v[i] > mx ? v[i] : mx;
    for (int i = 0; i < n; i++)
        s += p[i] = exp(v[i] - mx);
    for (int i = 0; i < n; i++)
        p[i] /= s;
}

/* One decision row: argmax, drift, logit error, margin, into input `in`. */
static void decide(const float *ref, const float *cand, int w, double *pr, double *pc,
                   engine_parity_input *in) {
    int ar, ac;
    double mr, mc, err = 0, drift = 0;
    top2(ref, w, &ar, &mr);
    top2(cand, w, &ac, &mc);
    softmax(ref, w, pr);
    softmax(cand, w, pc);
    for (int i = 0; i < w; i++) {
        double e = fabs((double)ref[i] - cand[i]), d = fabs(pr[i] - pc[i]);
        err = e > err ? e : err;
        drift = d > drift ? d : drift;
    }
    in->n_decisions++;
    in->n_agree += ar == ac;
    in->logit_err = err > in->logit_err ? err : in->logit_err;
    in->prob_drift = drift > in->prob_drift ? drift : in->prob_drift;
    in->margin = mr < in->margin ? mr : in->margin;
    if (mr < 2 * err) in->certified = 0;
}

static void layer_stats(const gate *g, const run_out *r, const run_out *c,
                        engine_parity_report *rep) {
    int D = g->c->hidden_size;
    size_t per = (size_t)g->n * g->seq * D;
    for (int l = 0; l < rep->n_hidden; l++) {
        double mx = 0, sum = 0, ref = 0;
        size_t cnt = 0;
        for (int b = 0; b < g->n; b++)
            for (int t = 0; t < g->seq; t++) {
                if (g->io.mask && !g->io.mask[(size_t)b * g->seq + t]) continue;
                size_t o = l * per + ((size_t)b * g->seq + t) * D;
                for (int k = 0; k < D; k++) {
                    double e = fabs((double)r->hidden[o + k] - c->hidden[o + k]);
                    mx = e > mx ? e : mx;
                    sum += e;
                    ref = fabs(r->hidden[o + k]) > ref ? fabs(r->hidden[o + k]) : ref;
                    cnt++;
                }
            }
        rep->layer_max[l] = mx;
        rep->layer_mean[l] = cnt ? sum / cnt : 0;
        rep->layer_ref_max[l] = ref;
    }
}

static nc_status decisions(const gate *g, const run_out *r, const run_out *c,
                           engine_parity_report *rep, nc_error *err) {
    int w = g->width;
    double *pr = malloc((size_t)w * sizeof *pr), *pc = malloc((size_t)w * sizeof *pc);
    if (!pr || !pc) {
        free(pr);
        free(pc);
        return nc_fail(err, NC_ERR_NOMEM, "parity: out of memory");
    }
    for (int b = 0; b < g->n; b++) {
        engine_parity_input *in = &rep->inputs[b];
        in->margin = INFINITY;
        in->certified = 1;
        in->cosine = 1;
        for (int t = 0; t < g->seq; t++)
            in->n_tokens += !g->io.mask || g->io.mask[(size_t)b * g->seq + t];
    }
    if (g->kind == ENGINE_PARITY_MLM)
        for (size_t i = 0; i < g->n_rows; i++)
            decide(r->logits + i * w, c->logits + i * w, w, pr, pc,
                   &rep->inputs[g->rows[i] / g->seq]);
    if (g->kind == ENGINE_PARITY_CLASSIFIER)
        for (int b = 0; b < g->n; b++)
            decide(r->logits + (size_t)b * w, c->logits + (size_t)b * w, w, pr, pc,
                   &rep->inputs[b]);
    if (g->kind == ENGINE_PARITY_EMBEDDING)
        for (int b = 0; b < g->n; b++) {
            const float *x = r->pooled + (size_t)b * w, *y = c->pooled + (size_t)b * w;
            double xy = 0, xx = 0, yy = 0, e = 0;
            for (int k = 0; k < w; k++) {
                xy += (double)x[k] * y[k];
                xx += (double)x[k] * x[k];
                yy += (double)y[k] * y[k];
                e = fabs((double)x[k] - y[k]) > e ? fabs((double)x[k] - y[k]) : e;
            }
            engine_parity_input *in = &rep->inputs[b];
            in->cosine = xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == yy ? 1 : 0);
            in->logit_err = e;
            in->margin = NAN;
        }
    free(pr);
    free(pc);
    rep->min_cosine = 1;
    for (int b = 0; b < g->n; b++) {
        const engine_parity_input *in = &rep->inputs[b];
        rep->n_decisions += in->n_decisions;
        rep->n_agree += in->n_agree;
        rep->n_not_certified += g->kind != ENGINE_PARITY_EMBEDDING && !in->certified;
        rep->max_prob_drift =
            in->prob_drift > rep->max_prob_drift ? in->prob_drift : rep->max_prob_drift;
        rep->min_cosine = in->cosine < rep->min_cosine ? in->cosine : rep->min_cosine;
    }
    return NC_OK;
}

static void verdict(engine_parity_report *rep) {
    rep->passed = 0;
    if (!rep->is_finite)
        snprintf(rep->why, sizeof rep->why, "the candidate produced inf/NaN");
    else if (!rep->is_deterministic)
        snprintf(rep->why, sizeof rep->why, "the candidate's outputs differ between runs");
    else if (rep->n_agree < rep->n_decisions)
        snprintf(rep->why, sizeof rep->why, "argmax agreement %d/%d (must be 100%%)", rep->n_agree,
                 rep->n_decisions);
    else if (rep->max_prob_drift > ENGINE_PARITY_MAX_DRIFT)
        snprintf(rep->why, sizeof rep->why, "probability drift %.4f > %.2f", rep->max_prob_drift,
                 ENGINE_PARITY_MAX_DRIFT);
    else if (rep->kind == ENGINE_PARITY_EMBEDDING && !(rep->min_cosine >= ENGINE_PARITY_MIN_COSINE))
        snprintf(rep->why, sizeof rep->why, "pooled cosine %.6f < %.3f", rep->min_cosine,
                 ENGINE_PARITY_MIN_COSINE);
    else {
        rep->why[0] = '\0';
        rep->passed = 1;
    }
}

/* Both encoders, of one shape and head. */
static nc_status like_with_like(const engine *ref, const engine *cand, nc_error *err) {
    if (!ref->encoder || !cand->encoder)
        return nc_fail(err, NC_ERR_INVALID, "parity: the %s engine is not an encoder",
                       ref->encoder ? cand->kind : ref->kind);
    const modernbert_config *a = ref->encoder, *b = cand->encoder;
    if (a->hidden_size != b->hidden_size || a->num_hidden_layers != b->num_hidden_layers ||
        a->vocab_size != b->vocab_size || a->head != b->head || a->num_labels != b->num_labels)
        return nc_fail(err, NC_ERR_INVALID,
                       "parity: the candidate (%s) was not compiled from a model shaped like the "
                       "reference (%s): sizes or head differ",
                       cand->kind, ref->kind);
    return NC_OK;
}

nc_status engine_parity_run(engine *reference, engine *candidate, const int32_t *ids,
                            const int32_t *mask, int n, int seq, int repeats,
                            engine_parity_report *rep, nc_error *err) {
    memset(rep, 0, sizeof *rep);
    if (n < 1 || seq < 1) return nc_fail(err, NC_ERR_INVALID, "parity: no inputs");
    NC_TRY(like_with_like(reference, candidate, err));
    gate g;
    memset(&g, 0, sizeof g);
    g.c = reference->encoder;
    g.kind = g.c->head == MODERNBERT_HEAD_MLM          ? ENGINE_PARITY_MLM
             : g.c->head == MODERNBERT_HEAD_CLASSIFIER ? ENGINE_PARITY_CLASSIFIER
                                                       : ENGINE_PARITY_EMBEDDING;
    g.n = n;
    g.seq = seq;
    g.width = g.kind == ENGINE_PARITY_MLM          ? g.c->vocab_size
              : g.kind == ENGINE_PARITY_CLASSIFIER ? g.c->num_labels
                                                   : g.c->hidden_size;
    rep->kind = g.kind;
    rep->n_inputs = n;
    rep->n_hidden = g.c->num_hidden_layers + 1;
    rep->repeats = repeats < 2 ? 2 : repeats;
    g.n_hidden = (size_t)rep->n_hidden * n * seq * g.c->hidden_size;
    g.io.ids = ids;
    g.io.mask = mask;
    g.io.batch = n;
    g.io.seq = seq;
    g.io.pooling = -1;
    g.rows = malloc((size_t)n * seq * sizeof *g.rows);
    rep->inputs = calloc((size_t)n, sizeof *rep->inputs);
    if (!g.rows || !rep->inputs) {
        free(g.rows);
        engine_parity_report_free(rep);
        return nc_fail(err, NC_ERR_NOMEM, "parity: out of memory");
    }
    for (int i = 0; i < n * seq; i++)
        if (!mask || mask[i]) g.rows[g.n_rows++] = i;
    g.io.mlm_rows = g.rows;
    g.io.n_mlm_rows = (int)g.n_rows;
    if (g.kind == ENGINE_PARITY_CLASSIFIER) g.n_rows = (size_t)n;
    run_out ref, c0, c1;
    memset(&c0, 0, sizeof c0);
    memset(&c1, 0, sizeof c1);
    nc_status st = out_alloc(&g, &ref, err);
    if (!st) st = out_alloc(&g, &c0, err);
    if (!st) st = out_alloc(&g, &c1, err);
    modernbert_io io;
    if (!st) {
        io = io_for(&g, &ref);
        st = engine_encode(reference, &io, err);
    }
    if (!st) {
        io = io_for(&g, &c0);
        st = engine_encode(candidate, &io, err);
    }
    size_t n_out = g.kind == ENGINE_PARITY_EMBEDDING ? (size_t)n * g.width : g.n_rows * g.width;
    rep->is_deterministic = 1;
    for (int r = 1; !st && r < rep->repeats; r++) {
        io = io_for(&g, &c1);
        st = engine_encode(candidate, &io, err);
        if (!st && (!same(c0.hidden, c1.hidden, g.n_hidden) || !same(c0.logits, c1.logits, n_out) ||
                    !same(c0.pooled, c1.pooled, n_out)))
            rep->is_deterministic = 0;
    }
    if (!st) {
        rep->is_finite = all_finite(c0.hidden, g.n_hidden) && all_finite(c0.logits, n_out) &&
                         all_finite(c0.pooled, n_out);
        layer_stats(&g, &ref, &c0, rep);
        st = decisions(&g, &ref, &c0, rep, err);
    }
    if (!st) verdict(rep);
    out_free(&ref);
    out_free(&c0);
    out_free(&c1);
    free(g.rows);
    if (st) engine_parity_report_free(rep);
    return st;
}

void engine_parity_report_free(engine_parity_report *rep) {
    free(rep->inputs);
    rep->inputs = NULL;
}

void engine_parity_print(const engine_parity_report *rep, FILE *f) {
    static const char *const kinds[] = {"masked-LM logits at every real position",
                                        "classifier logits per input", "pooled embeddings"};
    fprintf(f, "parity gate: %s (%d inputs, decisions on %s)\n", rep->passed ? "PASS" : "FAIL",
            rep->n_inputs, kinds[rep->kind]);
    if (!rep->passed) fprintf(f, "  failed: %s\n", rep->why);
    if (rep->kind != ENGINE_PARITY_EMBEDDING) {
        fprintf(f, "  argmax agreement   %d/%d (%.2f%%, must be 100%%)\n", rep->n_agree,
                rep->n_decisions,
                rep->n_decisions ? 100.0 * rep->n_agree / rep->n_decisions : 100.0);
        fprintf(f, "  max prob drift     %.6f (must be <= %.2f)\n", rep->max_prob_drift,
                ENGINE_PARITY_MAX_DRIFT);
    } else
        fprintf(f, "  min pooled cosine  %.6f (must be >= %.3f)\n", rep->min_cosine,
                ENGINE_PARITY_MIN_COSINE);
    fprintf(f, "  finite             %s\n", rep->is_finite ? "yes" : "NO");
    fprintf(f, "  deterministic      %s (%d runs, bitwise)\n", rep->is_deterministic ? "yes" : "NO",
            rep->repeats);
    fprintf(f, "  hidden states, real positions only (max |cpu| for scale):\n");
    for (int l = 0; l < rep->n_hidden; l++) {
        char what[32];
        if (l == 0)
            snprintf(what, sizeof what, "embeddings");
        else if (l == rep->n_hidden - 1)
            snprintf(what, sizeof what, "final norm");
        else
            snprintf(what, sizeof what, "layer %d", l - 1);
        fprintf(f, "    %-11s max %.3e  mean %.3e  (|h| <= %.3g)\n", what, rep->layer_max[l],
                rep->layer_mean[l], rep->layer_ref_max[l]);
    }
    fprintf(f, "  per input: tokens, agreement, logit error, top-1/top-2 margin, prob drift\n");
    for (int i = 0; i < rep->n_inputs; i++) {
        const engine_parity_input *in = &rep->inputs[i];
        if (rep->kind == ENGINE_PARITY_EMBEDDING)
            fprintf(f, "    #%-3d %3d tokens  cosine %.6f  max abs error %.3e\n", i, in->n_tokens,
                    in->cosine, in->logit_err);
        else
            fprintf(f, "    #%-3d %3d tokens  %d/%d agree  error %.3e  margin %.3e  drift %.2e%s\n",
                    i, in->n_tokens, in->n_agree, in->n_decisions, in->logit_err, in->margin,
                    in->prob_drift, in->certified ? "" : "  not certified (margin < 2 x error)");
    }
    if (rep->n_not_certified)
        fprintf(f, "  %d input(s) not certified: their agreement is not guaranteed by the margin\n",
                rep->n_not_certified);
}
