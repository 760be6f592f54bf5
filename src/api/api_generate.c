/* Sequences and generation of the public API, on the one generation
 * pipeline (src/gen: gen_seq). The pipeline reports a token, then the text
 * that became final; the API hands both to one callback: each token goes
 * out with the text released after it, so a token's call comes when the
 * next token (or the end) arrives. With reasoning split off
 * (nc_sequence_split_reasoning), the pipeline's reasoning text goes the
 * same way to the second callback, just before the first's. */
#include <stdlib.h>
#include <string.h>

#include "api/api_chat_request.h"
#include "api/api_model.h"
#include "api/api_sampling.h"
#include "gen/generate.h"
#include "gen/logprobs.h"

/* One generated token's logprobs (nc_sequence_logprob). */
typedef struct lp_entry {
    nc_logprob chosen;
    int n_top;
    nc_logprob top[GEN_MAX_TOP_LOGPROBS];
} lp_entry;

struct nc_sequence {
    nc_model *m;
    gen_seq *gs;
    gen_result last;          /* the last nc_generate's figures (nc_sequence_stat) */
    nc_chat_request *request; /* its constraint applies (nc_sequence_constrain) */
    int top_logprobs;         /* -1: no logprobs recorded */
    lp_entry *lps;            /* the current or last nc_generate's tokens */
    size_t n_lps, cap_lps;
    nc_token_callback reasoning_cb; /* NULL: no split (nc_sequence_split_reasoning) */
    void *reasoning_user;
    int starts_in_reasoning;
};

NC_API nc_status nc_sequence_new(nc_model *m, int ctx, nc_sequence **out, nc_error *err) {
    if (!m || !out) return nc_fail(err, NC_ERR_INVALID, "nc_sequence_new: NULL argument");
    *out = NULL;
    if (m->kind != NC_MODEL_DECODER)
        return nc_fail(err, NC_ERR_INVALID,
                       "%s is an encoder: generation needs a decoder (an encoder embeds, fills "
                       "masks or classifies)",
                       m->dir);
    if (ctx < 0) return nc_fail(err, NC_ERR_INVALID, "nc_sequence_new: ctx %d < 0", ctx);
    nc_sequence *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "nc_sequence_new: out of memory");
    s->m = m;
    s->top_logprobs = -1;
    nc_status st = gen_seq_new(m->gm, ctx > 0 ? ctx : m->ctx, &s->gs, err);
    if (st != NC_OK) {
        free(s);
        return st;
    }
    *out = s;
    return NC_OK;
}

NC_API void nc_sequence_free(nc_sequence *s) {
    if (!s) return;
    gen_seq_free(s->gs);
    free(s->lps);
    free(s);
}

NC_API void nc_sequence_reset(nc_sequence *s) {
    if (s) gen_seq_reset(s->gs);
}

NC_API int nc_sequence_context(const nc_sequence *s) {
    return s ? gen_seq_ctx(s->gs) : 0;
}

NC_API nc_status nc_sequence_constrain(nc_sequence *s, nc_chat_request *r, nc_error *err) {
    if (!s) return nc_fail(err, NC_ERR_INVALID, "nc_sequence_constrain: NULL argument");
    s->request = r;
    return NC_OK;
}

NC_API nc_status nc_sequence_split_reasoning(nc_sequence *s, nc_token_callback cb, void *user,
                                             int starts_inside, nc_error *err) {
    if (!s) return nc_fail(err, NC_ERR_INVALID, "nc_sequence_split_reasoning: NULL argument");
    s->reasoning_cb = cb;
    s->reasoning_user = user;
    s->starts_in_reasoning = cb && starts_inside;
    return NC_OK;
}

NC_API nc_status nc_sequence_set_logprobs(nc_sequence *s, int k, nc_error *err) {
    if (!s) return nc_fail(err, NC_ERR_INVALID, "nc_sequence_set_logprobs: NULL argument");
    if (k < -1 || k > GEN_MAX_TOP_LOGPROBS)
        return nc_fail(err, NC_ERR_INVALID,
                       "nc_sequence_set_logprobs: %d alternatives is outside -1..%d", k,
                       GEN_MAX_TOP_LOGPROBS);
    s->top_logprobs = k;
    return NC_OK;
}

NC_API int nc_sequence_logprob(const nc_sequence *s, size_t i, nc_logprob *chosen, nc_logprob *top,
                               int max_top) {
    if (!s || s->top_logprobs < 0 || i >= s->n_lps) return -1;
    const lp_entry *e = &s->lps[i];
    if (chosen) *chosen = e->chosen;
    int n = e->n_top < max_top ? e->n_top : max_top;
    for (int k = 0; k < n && top; k++)
        top[k] = e->top[k];
    return top ? n : 0;
}

/* Records a sampled token's logprobs; 0, or -1 when out of memory. */
static int record_logprob(nc_sequence *s, int32_t token, const float *logits) {
    if (s->n_lps == s->cap_lps) {
        size_t cap = s->cap_lps ? 2 * s->cap_lps : 64;
        lp_entry *more = realloc(s->lps, cap * sizeof *more);
        if (!more) return -1;
        s->lps = more;
        s->cap_lps = cap;
    }
    lp_entry *e = &s->lps[s->n_lps++];
    int32_t ids[GEN_MAX_TOP_LOGPROBS];
    double lp, top_lp[GEN_MAX_TOP_LOGPROBS];
    e->n_top = gen_logprobs(logits, s->m->gm->e->n_vocab, token, s->top_logprobs, &lp, ids, top_lp);
    e->chosen = (nc_logprob){token, (float)lp};
    for (int k = 0; k < e->n_top; k++)
        e->top[k] = (nc_logprob){ids[k], (float)top_lp[k]};
    return 0;
}

/* Text released for the token waiting to go out, of one kind. */
typedef struct piece {
    char *text;
    size_t len, cap;
} piece;

/* One request's delivery state: the token waiting for its text. */
typedef struct relay {
    nc_sequence *seq;
    nc_token_callback cb;
    void *user;
    int32_t pending; /* -1: none */
    piece content, reasoning;
    int nomem;
    int cancelled; /* the callback asked to stop: nothing more goes out */
} relay;

/* Hands p's text to cb with token t, emptying p; non-zero: cancel. */
static int hand_over(nc_token_callback cb, void *user, int32_t t, piece *p) {
    size_t n = p->len;
    p->len = 0;
    return cb && cb(user, t, p->text ? p->text : "", n);
}

static int deliver(relay *r) {
    if (r->pending < 0) return 0;
    int32_t t = r->pending;
    r->pending = -1;
    if (r->reasoning.len)
        r->cancelled = hand_over(r->seq->reasoning_cb, r->seq->reasoning_user, t, &r->reasoning);
    if (!r->cancelled) r->cancelled = hand_over(r->cb, r->user, t, &r->content);
    return r->cancelled;
}

static int on_token(void *user, int32_t token, const float *logits) {
    relay *r = user;
    /* recorded before the previous token goes out: a callback may read
     * entries up to its own token */
    if (r->seq->top_logprobs >= 0 && record_logprob(r->seq, token, logits) != 0)
        return r->nomem = 1;
    if (deliver(r)) return 1; /* this token is dropped with the rest */
    r->pending = token;
    return 0;
}

static int on_text(void *user, gen_text_kind kind, const char *text, size_t len) {
    relay *r = user;
    if (r->cancelled) return 1;
    piece *p = kind == GEN_TEXT_REASONING ? &r->reasoning : &r->content;
    if (p->len + len + 1 > p->cap) {
        size_t cap = (p->len + len + 1) * 2;
        char *more = realloc(p->text, cap);
        if (!more) return r->nomem = 1;
        p->text = more;
        p->cap = cap;
    }
    memcpy(p->text + p->len, text, len);
    p->len += len;
    p->text[p->len] = '\0';
    return 0;
}

NC_API double nc_sequence_stat(const nc_sequence *s, nc_stat what) {
    if (!s) return 0;
    const gen_result *r = &s->last;
    switch (what) {
    case NC_STAT_PROMPT_TOKENS:
        return r->n_prompt;
    case NC_STAT_PROMPT_CACHED:
        return r->n_prompt_cached;
    case NC_STAT_PROMPT_DROPPED:
        return r->n_truncated;
    case NC_STAT_GENERATED:
        return r->n_generated;
    case NC_STAT_PROMPT_SECONDS:
        return r->prompt_s;
    case NC_STAT_GENERATE_SECONDS:
        return r->gen_s;
    case NC_STAT_DRAFTED:
        return r->n_drafted;
    case NC_STAT_DRAFT_ACCEPTED:
        return r->n_accepted;
    case NC_STAT_DRAFT_STEPS:
        return r->n_draft_steps;
    }
    return 0;
}

/* nc_finish -> gen_finish: the one table both directions read. */
static const gen_finish GEN_FINISH_OF[] = {GEN_FINISH_EOS, GEN_FINISH_STOP, GEN_FINISH_LENGTH,
                                           GEN_FINISH_CONTEXT, GEN_FINISH_CANCEL};
#define N_FINISH (int)(sizeof GEN_FINISH_OF / sizeof *GEN_FINISH_OF)

NC_API const char *nc_finish_name(nc_finish f) {
    return (int)f >= 0 && (int)f < N_FINISH ? gen_finish_name(GEN_FINISH_OF[f]) : "unknown";
}

static nc_finish finish_of(gen_finish f) {
    for (int i = 0; i < N_FINISH; i++)
        if (GEN_FINISH_OF[i] == f) return (nc_finish)i;
    return NC_FINISH_EOS;
}

NC_API nc_status nc_generate_tokens(nc_sequence *s, const int32_t *prompt, size_t n_prompt,
                                    int max_tokens, const nc_sampling *sampling,
                                    nc_token_callback cb, void *user, nc_finish *finish,
                                    nc_error *err) {
    if (!s || (!prompt && n_prompt))
        return nc_fail(err, NC_ERR_INVALID, "nc_generate: NULL argument");
    if (n_prompt > (size_t)1 << 30)
        return nc_fail(err, NC_ERR_RANGE, "nc_generate: a prompt of %zu tokens", n_prompt);
    gen_request req;
    memset(&req, 0, sizeof req);
    req.sampling = sampling ? sampling->params : gen_sampler_defaults_greedy();
    req.max_new_tokens = max_tokens;
    if (sampling) {
        req.stops = (const char *const *)sampling->stops;
        req.n_stops = sampling->n_stops;
        req.truncate = sampling->truncate;
    }
    req.constraint = api_chat_request_constraint(s->request);
    req.split_reasoning = s->reasoning_cb != NULL;
    req.starts_in_reasoning = s->starts_in_reasoning;
    memset(&s->last, 0, sizeof s->last);
    s->n_lps = 0;
    relay r = {s, cb, user, -1, {0}, {0}, 0, 0};
    gen_callbacks gcb = {on_token, on_text, &r};
    gen_result res;
    nc_status st = gen_generate(s->gs, prompt, (int)n_prompt, &req, &gcb, &res, err);
    if (st == NC_OK) s->last = res;
    if (st == NC_OK && r.nomem) st = nc_fail(err, NC_ERR_NOMEM, "nc_generate: out of memory");
    if (st == NC_OK) {
        if (!r.cancelled && !deliver(&r) && cb) cb(user, -1, "", 0);
        if (finish) *finish = finish_of(res.finish);
    }
    free(r.content.text);
    free(r.reasoning.text);
    return st;
}

NC_API nc_status nc_generate(nc_sequence *s, const char *prompt, int max_tokens,
                             const nc_sampling *sampling, nc_token_callback cb, void *user,
                             nc_finish *finish, nc_error *err) {
    if (!s || !prompt) return nc_fail(err, NC_ERR_INVALID, "nc_generate: NULL argument");
    int32_t *ids;
    size_t n;
    NC_TRY(tok_encode(s->m->tokenizer.tok, prompt, strlen(prompt), &ids, &n, err));
    nc_status st = nc_generate_tokens(s, ids, n, max_tokens, sampling, cb, user, finish, err);
    free(ids);
    return st;
}
