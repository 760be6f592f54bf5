/* The generation loop. Per request: fit the prompt to the context (or fail
 * before any work), reuse the longest cached prefix, run the rest of the
 * prompt as one batch, then sample -> detokenize -> stop-string filter ->
 * callback -> forward one token, until something ends it. Every buffer is
 * allocated with the session; the per-token path allocates nothing (the
 * stop filter may grow its buffer once for an unusually long piece). */
#include "gen/generate.h"

#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "gen/stop.h"
#include "text/detok.h"

#define GEN_MAX_EOS 16

struct gen_session {
    gen_engine eng;
    const tok_tokenizer *tok;
    gen_sampler *sampler;
    float *logits;  /* [n_vocab] */
    int32_t *cache; /* [ctx] the ids whose K/V the engine holds */
    int n_cache, ctx;
    char *piece; /* [piece_cap] detokenizer output */
    size_t piece_cap;
    int32_t eos[GEN_MAX_EOS];
    int n_eos;
};

const char *gen_finish_name(gen_finish f) {
    switch (f) {
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
    }
    return "?";
}

static void add_eos(gen_session *s, int32_t id) {
    if (id < 0 || s->n_eos >= GEN_MAX_EOS || gen_session_is_eos(s, id)) return;
    s->eos[s->n_eos++] = id;
}

int gen_session_is_eos(const gen_session *s, int32_t id) {
    for (int i = 0; i < s->n_eos; i++)
        if (s->eos[i] == id) return 1;
    return 0;
}

void gen_session_free(gen_session *s) {
    if (!s) return;
    gen_sampler_free(s->sampler);
    free(s->logits);
    free(s->cache);
    free(s->piece);
    free(s);
}

nc_status gen_session_new(const gen_engine *engine, const tok_tokenizer *tok, gen_session **out,
                          nc_error *err) {
    *out = NULL;
    gen_session *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "generation: out of memory");
    s->eng = *engine;
    s->tok = tok;
    s->ctx = engine->ctx(engine->state);
    s->piece_cap = tok_stream_cap(tok);
    if (s->piece_cap < 64) s->piece_cap = 64;
    s->logits = malloc((size_t)engine->n_vocab * sizeof *s->logits);
    s->cache = malloc((size_t)(s->ctx > 0 ? s->ctx : 1) * sizeof *s->cache);
    s->piece = malloc(s->piece_cap);
    gen_sampler_params greedy = gen_sampler_defaults_greedy();
    nc_status st = NC_OK;
    if (!s->logits || !s->cache || !s->piece)
        st = nc_fail(err, NC_ERR_NOMEM, "generation: out of memory");
    else
        st = gen_sampler_new(engine->n_vocab, &greedy, &s->sampler, err);
    if (st != NC_OK) {
        gen_session_free(s);
        return st;
    }
    for (int i = 0; i < engine->n_eos; i++)
        add_eos(s, engine->eos_ids[i]);
    add_eos(s, tok_find(tok, "<|im_end|>"));
    add_eos(s, tok_find(tok, "<|endoftext|>"));
    /* a cache the engine already holds is unknown to us: start empty */
    s->eng.truncate(s->eng.state, 0);
    *out = s;
    return NC_OK;
}

void gen_session_reset(gen_session *s) {
    s->eng.truncate(s->eng.state, 0);
    s->n_cache = 0;
}

/* Decides how much of the prompt to keep; fails when it cannot fit. */
static nc_status fit_prompt(const gen_session *s, int n_prompt, const gen_request *req, int *n_drop,
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
                       "%d new tokens leave no room for the prompt in the "
                       "context of %d tokens",
                       req->max_new_tokens, s->ctx);
    *n_drop = n_prompt - keep;
    return NC_OK;
}

/* Hands released text to the callback; returns 1 to stop (match or cancel). */
typedef struct emit_ctx {
    gen_stop *stop;
    gen_on_piece cb;
    void *user;
    int is_cancelled, is_stopped;
    nc_status st;
    nc_error *err;
} emit_ctx;

static void emit(emit_ctx *e, int32_t token, const char *text, size_t len) {
    const char *out;
    size_t out_len;
    int r = gen_stop_push(e->stop, text, len, &out, &out_len, e->err);
    if (r < 0) {
        e->st = NC_ERR_NOMEM;
        return;
    }
    if (r == 1) e->is_stopped = 1;
    if (e->cb && e->cb(e->user, token, out, out_len)) e->is_cancelled = 1;
}

nc_status gen_generate(gen_session *s, const int32_t *prompt, int n_prompt, const gen_request *req,
                       gen_on_piece on_piece, void *user, gen_result *res, nc_error *err) {
    memset(res, 0, sizeof *res);
    int n_drop;
    NC_TRY(fit_prompt(s, n_prompt, req, &n_drop, err));
    prompt += n_drop;
    n_prompt -= n_drop;
    NC_TRY(gen_sampler_reset(s->sampler, &req->sampling, err));
    gen_stop stop;
    NC_TRY(gen_stop_init(&stop, req->stops, req->n_stops, err));

    /* reuse the cached prefix; at least one token must run to give logits */
    int common = 0;
    if (s->eng.pos(s->eng.state) != s->n_cache) s->n_cache = 0; /* out of step: start over */
    while (common < s->n_cache && common < n_prompt && s->cache[common] == prompt[common])
        common++;
    if (common == n_prompt) common--;
    s->eng.truncate(s->eng.state, common);
    s->n_cache = common;

    double t0 = nc_now_s();
    nc_status st = s->eng.forward(s->eng.model, s->eng.state, prompt + common, n_prompt - common,
                                  s->logits, err);
    if (st != NC_OK) {
        gen_stop_free(&stop);
        return st;
    }
    memcpy(s->cache + common, prompt + common, (size_t)(n_prompt - common) * sizeof *prompt);
    s->n_cache = n_prompt;
    double t1 = nc_now_s();
    res->n_prompt = n_prompt;
    res->n_prompt_cached = common;
    res->n_truncated = n_drop;
    res->prompt_s = t1 - t0;
    for (int i = 0; i < n_prompt; i++)
        gen_sampler_accept(s->sampler, prompt[i]);

    tok_stream ts;
    tok_stream_init(&ts, s->tok);
    emit_ctx e = {&stop, on_piece, user, 0, 0, NC_OK, err};
    gen_finish finish = GEN_FINISH_LENGTH;
    int limit = req->max_new_tokens;
    for (;;) {
        if (limit >= 0 && res->n_generated >= limit) {
            finish = GEN_FINISH_LENGTH;
            break;
        }
        int32_t id = gen_sampler_sample(s->sampler, s->logits);
        res->n_generated++;
        if (gen_session_is_eos(s, id)) {
            finish = GEN_FINISH_EOS;
            break;
        }
        gen_sampler_accept(s->sampler, id);
        size_t n = tok_stream_push(&ts, id, s->piece, s->piece_cap);
        emit(&e, id, s->piece, n);
        if (e.st != NC_OK) break;
        if (e.is_stopped || e.is_cancelled) {
            finish = e.is_stopped ? GEN_FINISH_STOP : GEN_FINISH_CANCEL;
            break;
        }
        if (limit >= 0 && res->n_generated >= limit) {
            finish = GEN_FINISH_LENGTH; /* the last token need not run */
            break;
        }
        if (s->n_cache >= s->ctx) {
            finish = GEN_FINISH_CONTEXT;
            break;
        }
        st = s->eng.forward(s->eng.model, s->eng.state, &id, 1, s->logits, err);
        if (st != NC_OK) break;
        s->cache[s->n_cache++] = id;
    }
    if (st == NC_OK && e.st == NC_OK && finish != GEN_FINISH_STOP && finish != GEN_FINISH_CANCEL) {
        size_t n = tok_stream_flush(&ts, s->piece, s->piece_cap);
        if (n) emit(&e, -1, s->piece, n);
        if (e.is_stopped) finish = GEN_FINISH_STOP;
        const char *out;
        size_t out_len;
        gen_stop_flush(&stop, &out, &out_len);
        if (on_piece && out_len && !e.is_stopped) on_piece(user, -1, out, out_len);
    }
    gen_stop_free(&stop);
    res->finish = finish;
    res->gen_s = nc_now_s() - t1;
    if (st == NC_OK) st = e.st;
    return st;
}
