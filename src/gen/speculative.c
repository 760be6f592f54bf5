/* Speculative decoding (speculative.h): the draft's side (its sequence kept
 * in step with the target's tokens, the proposals) and the acceptance rule.
 * generate.c runs the target's verification step and feeds the chosen
 * tokens through its per-token pipeline. */
#include "gen/speculative.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "gen/model.h"

struct gen_spec {
    const gen_model *target;
    engine *de; /* the draft's engine */
    engine_seq *ds;
    int dctx;
    int32_t *dcache; /* [dctx] the ids whose state the draft holds */
    int n_dcache;
    gen_spec_options o;
    gen_sampler *dsampler; /* the request's filters, no penalties */
    int is_greedy;
    int is_off; /* a draft failure: plain steps for the rest of the request */
    gen_rng rng;
    int32_t tokens[GEN_SPEC_DRAFT_CAP + 1]; /* the verification item */
    int n_tokens;
    float *dlogits; /* [draft vocab] */
    float *q;       /* [draft_max, V] the distribution each proposal was drawn from */
    float *p;       /* [V] the target's at one position */
    float *rows;    /* [draft_max + 1, V] the verification's logits */
    int V;
};

nc_status gen_spec_check_options(const gen_spec_options *o, nc_error *err) {
    if (o->draft_max < 1 || o->draft_max > GEN_SPEC_DRAFT_CAP)
        return nc_fail(err, NC_ERR_INVALID, "draft_max %d: must be between 1 and %d", o->draft_max,
                       GEN_SPEC_DRAFT_CAP);
    if (o->draft_min < 0 || o->draft_min > o->draft_max)
        return nc_fail(err, NC_ERR_INVALID, "draft_min %d: must be between 0 and draft_max (%d)",
                       o->draft_min, o->draft_max);
    if (!(o->p_min >= 0.0f && o->p_min <= 1.0f))
        return nc_fail(err, NC_ERR_INVALID, "draft_p_min %g: must be in [0, 1]", (double)o->p_min);
    return NC_OK;
}

nc_status gen_spec_check_pair(const gen_model *t, const gen_model *d, nc_error *err) {
    int32_t nt = tok_vocab_size(t->tok), nd = tok_vocab_size(d->tok);
    if (nt != nd)
        return nc_fail(err, NC_ERR_INVALID,
                       "draft %s: its tokenizer has %d tokens, the target's %d: a draft must "
                       "share the target's tokenizer",
                       d->model_id, nd, nt);
    for (int32_t i = 0; i < nt; i++) {
        size_t la = 0, lb = 0;
        const char *a = tok_token_bytes(t->tok, i, &la), *b = tok_token_bytes(d->tok, i, &lb);
        if (la != lb || (la && memcmp(a, b, la)) || tok_is_special(t->tok, i) != tok_is_special(d->tok, i))
            return nc_fail(err, NC_ERR_INVALID,
                           "draft %s: token %d differs from the target's: a draft must share the "
                           "target's tokenizer",
                           d->model_id, i);
    }
    if (t->e->n_vocab != d->e->n_vocab)
        return nc_fail(err, NC_ERR_INVALID,
                       "draft %s: %d logits per token, the target's %d: a draft must share the "
                       "target's vocabulary",
                       d->model_id, d->e->n_vocab, t->e->n_vocab);
    return NC_OK;
}

nc_status gen_spec_attach(gen_model *target, const char *backend, const char *dir,
                          const engine_options *eo, const gen_spec_options *o, nc_error *err) {
    NC_TRY(gen_spec_check_options(o, err));
    if (!target->e->has_logits_all)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "--draft: the target (%s) cannot verify a draft in one step; speculative "
                       "decoding needs a target on the cpu backend",
                       target->e->kind);
    engine_options deo = *eo;
    if (strcmp(backend, "cpu")) deo.ctx = 0; /* a bundle's context is fixed */
    gen_model *d;
    NC_TRY(gen_model_open(backend, dir, &deo, &d, err));
    nc_status st = gen_spec_check_pair(target, d, err);
    if (st != NC_OK) {
        gen_model_close(d);
        return st;
    }
    gen_model_close(target->draft);
    target->draft = d;
    target->spec = *o;
    return NC_OK;
}

/* ---- the acceptance rule ------------------------------------------------- */

/* A token drawn from w[0..n) (non-negative, summing to total > 0). */
static int32_t draw(const float *w, int n, double total, gen_rng *rng) {
    double u = gen_rng_uniform(rng) * total, cum = 0.0;
    int32_t last = 0;
    for (int32_t i = 0; i < n; i++) {
        if (w[i] <= 0.0f) continue;
        cum += w[i];
        last = i;
        if (u < cum) return i;
    }
    return last; /* u within rounding of total */
}

int32_t gen_spec_accept(const float *p, const float *q, int n, int32_t d, gen_rng *rng,
                        int *accepted) {
    double pd = p[d], qd = q[d];
    double u = gen_rng_uniform(rng);
    if (qd > 0.0 && u * qd < pd) { /* u < p/q without dividing */
        *accepted = 1;
        return d;
    }
    *accepted = 0;
    /* norm(max(0, p - q)): its mass is sum(p - min(p, q)) > 0 whenever the
     * rule rejects (p == q everywhere would have accepted) */
    double total = 0.0;
    for (int i = 0; i < n; i++)
        if (p[i] > q[i]) total += (double)p[i] - q[i];
    if (!(total > 0.0)) return d; /* p == q up to rounding: d is a draw from p */
    double u2 = gen_rng_uniform(rng) * total, cum = 0.0;
    int32_t last = d;
    for (int32_t i = 0; i < n; i++) {
        if (!(p[i] > q[i])) continue;
        cum += (double)p[i] - q[i];
        last = i;
        if (u2 < cum) return i;
    }
    return last;
}

/* ---- per sequence ---------------------------------------------------------- */

void gen_spec_free(gen_spec *sp) {
    if (!sp) return;
    if (sp->ds) engine_seq_free(sp->de, sp->ds);
    gen_sampler_free(sp->dsampler);
    free(sp->dcache);
    free(sp->dlogits);
    free(sp->q);
    free(sp->p);
    free(sp->rows);
    free(sp);
}

nc_status gen_spec_new(const gen_model *target, int ctx, gen_spec **out, nc_error *err) {
    *out = NULL;
    const gen_model *d = target->draft;
    gen_spec *sp = calloc(1, sizeof *sp);
    if (!sp) return nc_fail(err, NC_ERR_NOMEM, "speculative decoding: out of memory");
    sp->target = target;
    sp->de = d->e;
    sp->o = target->spec;
    sp->V = target->e->n_vocab;
    /* a bundle's context is fixed: the draft speculates while it has room */
    sp->dctx = ctx <= 0 || ctx > d->e->ctx_max ? d->e->ctx_max : ctx;
    size_t V = (size_t)sp->V, K = (size_t)sp->o.draft_max;
    sp->dcache = malloc((size_t)sp->dctx * sizeof *sp->dcache);
    sp->dlogits = malloc(V * sizeof *sp->dlogits);
    sp->q = malloc(K * V * sizeof *sp->q);
    sp->p = malloc(V * sizeof *sp->p);
    sp->rows = malloc((K + 1) * V * sizeof *sp->rows);
    gen_sampler_params greedy = gen_sampler_defaults_greedy();
    nc_status st = sp->dcache && sp->dlogits && sp->q && sp->p && sp->rows
                       ? NC_OK
                       : nc_fail(err, NC_ERR_NOMEM, "speculative decoding: out of memory");
    if (st == NC_OK) st = gen_sampler_new(sp->V, &greedy, &sp->dsampler, err);
    if (st == NC_OK) st = engine_seq_new(sp->de, sp->dctx, &sp->ds, err);
    if (st != NC_OK) {
        gen_spec_free(sp);
        return st;
    }
    *out = sp;
    return NC_OK;
}

void gen_spec_start(gen_spec *sp, const gen_sampler_params *p) {
    /* the draft may draw from any q the rule is told of: the request's
     * filters without its penalties (no history to keep in step) */
    gen_sampler_params dp = *p;
    dp.repeat_penalty = 1.0f;
    dp.presence_penalty = dp.frequency_penalty = 0.0f;
    gen_sampler_reset(sp->dsampler, &dp, NULL); /* p was checked by the target's sampler */
    sp->is_greedy = p->temperature <= 0.0f || p->top_k == 1;
    gen_rng_seed(&sp->rng, p->seed ^ 0x5bd1e9955bd1e995ull);
    sp->is_off = 0;
}

void gen_spec_reset(gen_spec *sp) {
    sp->n_dcache = engine_seq_truncate(sp->de, sp->ds, 0);
}

/* The draft's forward over ids, its cache mirror following. */
static int draft_feed(gen_spec *sp, const int32_t *ids, int n) {
    nc_error err = {0};
    if (engine_forward(sp->de, sp->ds, ids, n, sp->dlogits, &err) != NC_OK) {
        nc_log(NC_LOG_WARN, "speculative decoding off for this request: the draft failed: %s",
               err.msg);
        sp->is_off = 1;
        return -1;
    }
    memcpy(sp->dcache + sp->n_dcache, ids, (size_t)n * sizeof *ids);
    sp->n_dcache += n;
    return 0;
}

/* The draft's next token from sp->dlogits; its distribution in q (sampling)
 * and its top probability in *top. */
static int32_t draft_pick(gen_spec *sp, float *q, float *top) {
    const float *l = sp->dlogits;
    int V = sp->V;
    if (sp->is_greedy) {
        int32_t id = gen_sampler_sample(sp->dsampler, l);
        if (sp->o.p_min > 0.0f) { /* softmax at the argmax */
            double mx = l[id], sum = 0.0;
            for (int i = 0; i < V; i++)
                sum += l[i] == l[i] ? exp((double)l[i] - mx) : 0.0;
            *top = (float)(1.0 / sum);
        }
        return id;
    }
    gen_sampler_probs(sp->dsampler, l, q);
    double total = 0.0;
    float mx = 0.0f;
    for (int i = 0; i < V; i++) {
        total += q[i];
        mx = q[i] > mx ? q[i] : mx;
    }
    *top = mx;
    return draw(q, V, total, &sp->rng);
}

static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb) {
    int n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

int gen_spec_propose(gen_spec *sp, const int32_t *hist, int n_hist, int max_k) {
    sp->tokens[0] = hist[n_hist - 1];
    sp->n_tokens = 1;
    if (max_k > sp->o.draft_max) max_k = sp->o.draft_max;
    if (max_k > sp->dctx - n_hist + 1) max_k = sp->dctx - n_hist + 1; /* the draft's room */
    if (sp->is_off || max_k < 1 || max_k < sp->o.draft_min) return 0;
    /* the draft catches up with the target: reuse the prefix it keeps */
    if (engine_seq_pos(sp->de, sp->ds) != sp->n_dcache) sp->n_dcache = 0;
    int c = common_prefix(sp->dcache, sp->n_dcache, hist, n_hist);
    if (c == n_hist) c--; /* one token must run to give logits */
    sp->n_dcache = engine_seq_truncate(sp->de, sp->ds, c);
    if (draft_feed(sp, hist + sp->n_dcache, n_hist - sp->n_dcache)) return 0;
    engine_seq_checkpoint(sp->de, sp->ds); /* a recurrent draft comes back here */
    int k = 0;
    size_t V = (size_t)sp->V;
    while (k < max_k) {
        float top = 1.0f;
        int32_t id = draft_pick(sp, sp->q + (size_t)k * V, &top);
        if (top < sp->o.p_min) break;
        sp->tokens[++k] = id;
        if (k == max_k || draft_feed(sp, &id, 1)) break;
    }
    if (sp->is_off || k < sp->o.draft_min) k = 0;
    sp->n_tokens = 1 + k;
    return k;
}

const int32_t *gen_spec_tokens(const gen_spec *sp) {
    return sp->tokens;
}

float *gen_spec_logits(gen_spec *sp) {
    return sp->rows;
}

int32_t gen_spec_choose(gen_spec *sp, gen_sampler *target, const float *row, int i, int *accepted) {
    int32_t d = sp->tokens[i + 1];
    if (sp->is_greedy) { /* the target's own choice, kept when the draft made it too */
        int32_t id = gen_sampler_sample(target, row);
        *accepted = id == d;
        return id;
    }
    gen_sampler_probs(target, row, sp->p);
    return gen_spec_accept(sp->p, sp->q + (size_t)i * sp->V, sp->V, d, &sp->rng, accepted);
}
