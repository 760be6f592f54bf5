/* The per-sequence generation pipeline (generate.h). Every buffer is
 * allocated with the sequence; the per-token path allocates nothing (the
 * stop filter and the reasoning split may grow a buffer once for an
 * unusually long piece). */
#include "gen/generate.h"

#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "gen/speculative.h"
#include "gen/stop.h"
#include "text/detok.h"

struct gen_seq {
    const gen_model *m;
    engine *e;
    engine_seq *es;
    int ctx;
    int32_t *cache; /* [ctx] the ids whose K/V the engine holds */
    int n_cache;
    int32_t *prompt; /* [ctx] the current request's prompt (after truncation) */
    int n_prompt, n_fed;
    int32_t next; /* sampled, not yet fed */
    float *logits;
    gen_sampler *sampler;
    gen_spec *spec; /* the draft's side, when the model has one */
    tok_stream detok;
    gen_stop stop;
    int has_stop, is_stop_matched;
    gen_think think;
    int split_reasoning;
    char *piece; /* [piece_cap] detokenizer output */
    size_t piece_cap;
    gen_callbacks cb;
    gen_constraint constraint;
    int limit;
    gen_result res;
    nc_error err;
    double t0, t1;
};

const char *gen_finish_name(gen_finish f) {
    switch (f) {
    case GEN_FINISH_NONE:
        return "none";
    case GEN_FINISH_EOS:
        return "eos";
    case GEN_FINISH_STOP:
        return "stop";
    case GEN_FINISH_LENGTH:
        return "length";
    case GEN_FINISH_CONTEXT:
        return "context";
    case GEN_FINISH_CANCEL:
        return "cancel";
    case GEN_FINISH_ERROR:
        return "error";
    }
    return "?";
}

void gen_seq_free(gen_seq *s) {
    if (!s) return;
    if (s->es) engine_seq_free(s->e, s->es);
    gen_sampler_free(s->sampler);
    gen_spec_free(s->spec);
    if (s->has_stop) gen_stop_free(&s->stop);
    gen_think_free(&s->think);
    free(s->cache);
    free(s->prompt);
    free(s->logits);
    free(s->piece);
    free(s);
}

nc_status gen_seq_new(const gen_model *m, int ctx, gen_seq **out, nc_error *err) {
    *out = NULL;
    gen_seq *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "generation: out of memory");
    s->m = m;
    s->e = m->e;
    s->ctx = ctx <= 0 || ctx > m->e->ctx_max ? m->e->ctx_max : ctx;
    s->piece_cap = tok_stream_cap(m->tok);
    if (s->piece_cap < 64) s->piece_cap = 64;
    s->cache = malloc((size_t)(s->ctx > 0 ? s->ctx : 1) * sizeof *s->cache);
    s->prompt = malloc((size_t)(s->ctx > 0 ? s->ctx : 1) * sizeof *s->prompt);
    s->logits = malloc((size_t)m->e->n_vocab * sizeof *s->logits);
    s->piece = malloc(s->piece_cap);
    s->res.finish = GEN_FINISH_NONE;
    gen_sampler_params greedy = gen_sampler_defaults_greedy();
    nc_status st = NC_OK;
    if (!s->cache || !s->prompt || !s->logits || !s->piece)
        st = nc_fail(err, NC_ERR_NOMEM, "generation: out of memory");
    if (st == NC_OK) st = gen_sampler_new(m->e->n_vocab, &greedy, &s->sampler, err);
    if (st == NC_OK) st = engine_seq_new(s->e, s->ctx, &s->es, err);
    if (st == NC_OK && m->draft) st = gen_spec_new(m, s->ctx, &s->spec, err);
    if (st != NC_OK) {
        gen_seq_free(s);
        return st;
    }
    *out = s;
    return NC_OK;
}

int gen_seq_ctx(const gen_seq *s) {
    return s->ctx;
}

void gen_seq_reset(gen_seq *s) {
    s->n_cache = engine_seq_truncate(s->e, s->es, 0);
    if (s->spec) gen_spec_reset(s->spec);
}

static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb) {
    int n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

int gen_seq_cached_prefix(const gen_seq *s, const int32_t *prompt, int n) {
    return common_prefix(s->cache, s->n_cache, prompt, n);
}

/* Decides how much of the prompt to keep; fails when it cannot fit. */
static nc_status fit_prompt(const gen_seq *s, int n_prompt, const gen_request *req, int *n_drop,
                            nc_error *err) {
    *n_drop = 0;
    if (n_prompt <= 0) return nc_fail(err, NC_ERR_INVALID, "the prompt is empty (no tokens)");
    int room = req->max_new_tokens < 0 ? 1 : req->max_new_tokens;
    if ((long)n_prompt + room <= s->ctx) return NC_OK;
    if (!req->truncate) {
        if (req->max_new_tokens < 0)
            return nc_fail(err, NC_ERR_RANGE,
                           "the prompt (%d tokens) does not fit in the context of %d tokens",
                           n_prompt, s->ctx);
        return nc_fail(err, NC_ERR_RANGE,
                       "the prompt (%d tokens) plus %d new tokens exceeds the context of %d "
                       "tokens",
                       n_prompt, req->max_new_tokens, s->ctx);
    }
    /* with no limit, keep half the context for the continuation */
    int keep = req->max_new_tokens < 0 ? s->ctx / 2 : s->ctx - req->max_new_tokens;
    if (keep < 1)
        return nc_fail(err, NC_ERR_RANGE,
                       "%d new tokens leave no room for the prompt in the context of %d tokens",
                       req->max_new_tokens, s->ctx);
    *n_drop = n_prompt - keep;
    return NC_OK;
}

nc_status gen_seq_start(gen_seq *s, const int32_t *prompt, int n, const gen_request *req,
                        const gen_callbacks *cb, nc_error *err) {
    int n_drop;
    NC_TRY(fit_prompt(s, n, req, &n_drop, err));
    NC_TRY(gen_sampler_reset(s->sampler, &req->sampling, err));
    if (s->spec) gen_spec_start(s->spec, &req->sampling);
    gen_stop stop;
    NC_TRY(gen_stop_init(&stop, req->stops, req->n_stops, err));
    if (s->has_stop) gen_stop_free(&s->stop);
    s->stop = stop;
    s->has_stop = 1;
    s->is_stop_matched = 0;
    memset(&s->res, 0, sizeof s->res);
    s->res.finish = GEN_FINISH_NONE;
    memset(&s->err, 0, sizeof s->err);
    s->cb = cb ? *cb : (gen_callbacks){0};
    s->limit = req->max_new_tokens;
    memset(&s->constraint, 0, sizeof s->constraint);
    if (req->constraint) s->constraint = *req->constraint;
    s->split_reasoning = req->split_reasoning;
    gen_think_init(&s->think, s->m->tok, s->m->e->family, req->starts_in_reasoning);
    tok_stream_init(&s->detok, s->m->tok);
    s->n_prompt = n - n_drop;
    memcpy(s->prompt, prompt + n_drop, (size_t)s->n_prompt * sizeof *prompt);
    /* reuse the cached prefix as far as the engine keeps it; at least one
     * token must run to give logits */
    if (engine_seq_pos(s->e, s->es) != s->n_cache) s->n_cache = 0; /* out of step: start over */
    int common = common_prefix(s->cache, s->n_cache, s->prompt, s->n_prompt);
    if (common == s->n_prompt) common--;
    s->n_cache = engine_seq_truncate(s->e, s->es, common);
    s->n_fed = s->n_cache;
    s->res.n_prompt = s->n_prompt;
    s->res.n_prompt_cached = s->n_fed;
    s->res.n_truncated = n_drop;
    /* penalties look at the prompt too, as HF's repetition penalty does */
    for (int i = 0; i < s->n_prompt; i++)
        gen_sampler_accept(s->sampler, s->prompt[i]);
    s->t0 = s->t1 = nc_now_s();
    return NC_OK;
}

/* Speculative decoding: the draft's proposals after the next token make the
 * item a verification (every position's logits). Not under a constraint,
 * whose state cannot step back over a rejected token. Returns 0 for a
 * plain step. */
static int propose(gen_seq *s, engine_step_item *it) {
    if (!s->spec || s->constraint.mask) return 0;
    int max_k = s->ctx - s->n_cache - 1; /* the target's room */
    if (s->limit >= 0 && s->limit - s->res.n_generated - 1 < max_k)
        max_k = s->limit - s->res.n_generated - 1; /* the last token is the target's own */
    s->cache[s->n_cache] = s->next; /* the history the draft follows (not yet fed) */
    int k = gen_spec_propose(s->spec, s->cache, s->n_cache + 1, max_k);
    if (k == 0) return 0;
    engine_seq_checkpoint(s->e, s->es); /* a recurrent target comes back here on a rejection */
    it->tokens = gen_spec_tokens(s->spec);
    it->n = 1 + k;
    it->logits = gen_spec_logits(s->spec);
    it->logits_all = 1;
    s->res.n_drafted += k;
    s->res.n_draft_steps++;
    return 1;
}

int gen_seq_next_item(gen_seq *s, int max_prompt_chunk, engine_step_item *it) {
    if (s->res.finish != GEN_FINISH_NONE) return 0;
    memset(it, 0, sizeof *it);
    it->seq = s->es;
    it->logits = s->logits;
    if (s->n_fed < s->n_prompt) {
        it->tokens = s->prompt + s->n_fed;
        it->n = s->n_prompt - s->n_fed;
        if (max_prompt_chunk > 0 && it->n > max_prompt_chunk) it->n = max_prompt_chunk;
    } else if (!propose(s, it)) {
        it->tokens = &s->next;
        it->n = 1;
    }
    return 1;
}

/* Content goes through the stop filter; reasoning straight out. */
static int emit(void *user, gen_text_kind kind, const char *text, size_t len) {
    gen_seq *s = user;
    if (kind == GEN_TEXT_CONTENT) {
        if (s->is_stop_matched) return 0;
        const char *out;
        size_t out_len;
        int r = gen_stop_push(&s->stop, text, len, &out, &out_len, &s->err);
        if (r < 0) return -1;
        if (r == 1) s->is_stop_matched = 1;
        text = out;
        len = out_len;
    }
    if (!len || !s->cb.on_text) return 0;
    return s->cb.on_text(s->cb.user, kind, text, len) ? 1 : 0;
}

/* Returns non-zero to stop: 1 cancelled, -1 out of memory. */
static int route(gen_seq *s, const char *text, size_t len) {
    if (s->split_reasoning) return gen_think_text(&s->think, text, len, emit, s);
    return len ? emit(s, GEN_TEXT_CONTENT, text, len) : 0;
}

static int end(gen_seq *s, gen_finish f) {
    s->res.finish = f;
    s->res.gen_s = nc_now_s() - s->t1;
    return 1;
}

static int fail(gen_seq *s, nc_status code, const char *what) {
    if (code == NC_ERR_NOMEM && !s->err.code) nc_fail(&s->err, NC_ERR_NOMEM, "%s", what);
    return end(s, GEN_FINISH_ERROR);
}

/* A natural end (eos, length, context): releases held-back text. */
static int finish_flush(gen_seq *s, gen_finish f) {
    size_t n = tok_stream_flush(&s->detok, s->piece, s->piece_cap);
    int r = route(s, s->piece, n);
    if (r < 0) return fail(s, NC_ERR_NOMEM, "generation: out of memory");
    if (s->is_stop_matched) return end(s, GEN_FINISH_STOP);
    const char *out;
    size_t out_len;
    gen_stop_flush(&s->stop, &out, &out_len);
    if (out_len && s->cb.on_text) s->cb.on_text(s->cb.user, GEN_TEXT_CONTENT, out, out_len);
    return end(s, f);
}

static int take_token(gen_seq *s, int32_t id, const float *logits);
static int after_verify(gen_seq *s, const engine_step_item *it);

int gen_seq_after_step(gen_seq *s, const engine_step_item *it) {
    if (s->res.finish != GEN_FINISH_NONE) return 1;
    if (it->status != NC_OK) {
        s->err = it->err; /* the sequence is as it was before the step */
        return end(s, GEN_FINISH_ERROR);
    }
    memcpy(s->cache + s->n_cache, it->tokens, (size_t)it->n * sizeof *it->tokens);
    s->n_cache += it->n;
    if (s->n_fed < s->n_prompt) {
        s->n_fed += it->n;
        if (s->n_fed < s->n_prompt) return 0; /* more prompt to read */
        s->t1 = nc_now_s();
        s->res.prompt_s = s->t1 - s->t0;
    }
    if (s->limit >= 0 && s->res.n_generated >= s->limit) return finish_flush(s, GEN_FINISH_LENGTH);
    if (it->logits_all) return after_verify(s, it);
    if (s->constraint.mask) s->constraint.mask(s->constraint.user, s->logits);
    int32_t id = gen_sampler_sample(s->sampler, s->logits);
    if (s->constraint.accept) s->constraint.accept(s->constraint.user, id);
    return take_token(s, id, s->logits);
}

/* A sampled token through the rest of the pipeline: end of sequence,
 * callbacks, detokenizer, reasoning split, stop strings, limits. Returns 1
 * when the request has finished. */
static int take_token(gen_seq *s, int32_t id, const float *logits) {
    s->res.n_generated++;
    if (gen_model_is_eos(s->m, id)) return finish_flush(s, GEN_FINISH_EOS);
    if (s->cb.on_token && s->cb.on_token(s->cb.user, id, logits))
        return end(s, GEN_FINISH_CANCEL);
    gen_sampler_accept(s->sampler, id);
    int r;
    if (s->split_reasoning && gen_think_closes(&s->think, id)) {
        /* the reasoning's last characters, then the tag */
        size_t n = tok_stream_flush(&s->detok, s->piece, s->piece_cap);
        r = route(s, s->piece, n);
        gen_think_tag(&s->think, id);
    } else if (s->split_reasoning && gen_think_tag(&s->think, id)) {
        r = 0;
    } else {
        size_t n = tok_stream_push(&s->detok, id, s->piece, s->piece_cap);
        r = route(s, s->piece, n);
    }
    if (r < 0) return fail(s, NC_ERR_NOMEM, "generation: out of memory");
    if (s->is_stop_matched) return end(s, GEN_FINISH_STOP);
    if (r > 0) return end(s, GEN_FINISH_CANCEL);
    if (s->limit >= 0 && s->res.n_generated >= s->limit) return finish_flush(s, GEN_FINISH_LENGTH);
    if (s->n_cache >= s->ctx) return finish_flush(s, GEN_FINISH_CONTEXT);
    s->next = id;
    return 0;
}

/* A verification of k = n - 1 proposals: position i's row chooses output
 * token i (the proposal kept, or the target's own choice, which ends the
 * step); the target's cache then keeps what was chosen, fed up to the
 * last token (which, as in a plain step, is fed by the next one). */
static int after_verify(gen_seq *s, const engine_step_item *it) {
    int k = it->n - 1, base = s->n_cache - it->n, n_kept = 0, is_done = 0;
    size_t V = (size_t)s->e->n_vocab;
    for (int i = 0; i <= k && !is_done; i++) {
        const float *row = it->logits + (size_t)i * V;
        int accepted = 0;
        int32_t id = i < k ? gen_spec_choose(s->spec, s->sampler, row, i, &accepted)
                           : gen_sampler_sample(s->sampler, row);
        s->n_cache = base + 1 + i; /* what a plain step would have fed by now */
        is_done = take_token(s, id, row);
        if (!accepted) break;
        n_kept++;
    }
    s->res.n_accepted += n_kept;
    int keep = base + 1 + n_kept;
    s->n_cache = engine_seq_truncate(s->e, s->es, keep);
    if (s->n_cache < keep) { /* the engine cannot go back that far: recompute */
        nc_error err = {0};
        if (engine_forward(s->e, s->es, s->cache + s->n_cache, keep - s->n_cache, it->logits,
                           &err) != NC_OK) {
            s->err = err;
            s->n_cache = engine_seq_pos(s->e, s->es);
            return is_done ? 1 : end(s, GEN_FINISH_ERROR);
        }
        s->n_cache = keep;
    }
    return is_done;
}

void gen_seq_constrain(gen_seq *s, const gen_constraint *c) {
    s->constraint = *c;
}

void gen_seq_cancel(gen_seq *s) {
    if (s->res.finish == GEN_FINISH_NONE) end(s, GEN_FINISH_CANCEL);
}

gen_finish gen_seq_finish(const gen_seq *s) {
    return s->res.finish;
}

const gen_result *gen_seq_result(const gen_seq *s) {
    return &s->res;
}

const nc_error *gen_seq_error(const gen_seq *s) {
    return &s->err;
}

nc_status gen_generate(gen_seq *s, const int32_t *prompt, int n, const gen_request *req,
                       const gen_callbacks *cb, gen_result *res, nc_error *err) {
    memset(res, 0, sizeof *res);
    NC_TRY(gen_seq_start(s, prompt, n, req, cb, err));
    engine_step_item it;
    while (gen_seq_next_item(s, 0, &it)) {
        nc_error step_err = {0};
        nc_status st = engine_step(s->e, &it, 1, &step_err);
        if (st != NC_OK) {
            it.status = st;
            it.err = step_err;
        }
        if (gen_seq_after_step(s, &it)) break;
    }
    *res = s->res;
    if (s->res.finish != GEN_FINISH_ERROR) return NC_OK;
    if (err) *err = s->err;
    return s->err.code ? s->err.code : NC_ERR_INTERNAL;
}
