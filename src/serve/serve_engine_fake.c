/* A deterministic stand-in for a model, so the HTTP layer, batching and
 * streaming can be tested exactly without weights. It "recites" a script:
 * the script's tokens S[0..L) are all distinct, and after a token t the
 * most likely next token is the one that follows t in S (after the last
 * script token: <|im_end|>; after a token not in S: S[0]). Logits are 0
 * except 6.0 on that token, plus 3.0 on token (fnv1a(history) % n_vocab),
 * so logprobs depend on the whole history and a slot that mixed up two
 * sequences' caches would show it. tools/make_serve_fixtures.py computes
 * the same function independently to make the expected outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mmap.h"
#include "serve/serve_engine.h"

#define FAKE_TOP_LOGIT 6.0f
#define FAKE_BUMP_LOGIT 3.0f

typedef struct fake_model {
    int32_t *script;
    size_t n_script;
    int32_t *next_of; /* n_vocab entries: the recited successor of each id */
    int step_ms;
} fake_model;

typedef struct fake_seq {
    int32_t *tokens;
    int n, ctx;
} fake_seq;

static uint32_t fnv1a_tokens(const int32_t *t, int n) {
    uint32_t h = 2166136261u;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)t[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xffu;
            h *= 16777619u;
        }
    }
    return h;
}

static nc_status fake_seq_new(serve_engine *e, int ctx, void **out, nc_error *err) {
    if (ctx <= 0 || ctx > e->ctx_max) ctx = e->ctx_max;
    fake_seq *s = calloc(1, sizeof *s);
    if (s) s->tokens = malloc((size_t)ctx * sizeof *s->tokens);
    if (!s || !s->tokens) {
        if (s) free(s);
        return nc_fail(err, NC_ERR_NOMEM, "fake engine: out of memory for a sequence");
    }
    s->ctx = ctx;
    *out = s;
    return NC_OK;
}

static void fake_seq_free(serve_engine *e, void *seq) {
    (void)e;
    fake_seq *s = seq;
    if (!s) return;
    free(s->tokens);
    free(s);
}

static int fake_seq_pos(serve_engine *e, void *seq) {
    (void)e;
    return ((fake_seq *)seq)->n;
}

static void fake_seq_truncate(serve_engine *e, void *seq, int n_keep) {
    (void)e;
    fake_seq *s = seq;
    if (n_keep >= 0 && n_keep < s->n) s->n = n_keep;
}

static nc_status fake_step(serve_engine *e, serve_step_item *items, int n_items, nc_error *err) {
    (void)err;
    fake_model *m = e->impl;
    if (m->step_ms > 0) {
        struct timespec ts = {m->step_ms / 1000, (long)(m->step_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < n_items; i++) {
        serve_step_item *it = &items[i];
        fake_seq *s = it->seq;
        it->status = NC_OK;
        if (it->n <= 0 || s->n + it->n > s->ctx) {
            it->status = nc_fail(&it->err, NC_ERR_RANGE,
                                 "fake engine: %d tokens do not fit the context (%d of %d used)",
                                 it->n, s->n, s->ctx);
            continue;
        }
        for (int k = 0; k < it->n; k++) {
            if (it->tokens[k] < 0 || it->tokens[k] >= e->n_vocab) {
                it->status = nc_fail(&it->err, NC_ERR_INVALID,
                                     "fake engine: token id %d out of range", (int)it->tokens[k]);
                break;
            }
        }
        if (it->status != NC_OK) continue;
        memcpy(s->tokens + s->n, it->tokens, (size_t)it->n * sizeof *it->tokens);
        s->n += it->n;
        for (int v = 0; v < e->n_vocab; v++)
            it->logits[v] = 0.0f;
        it->logits[m->next_of[s->tokens[s->n - 1]]] += FAKE_TOP_LOGIT;
        it->logits[fnv1a_tokens(s->tokens, s->n) % (uint32_t)e->n_vocab] += FAKE_BUMP_LOGIT;
    }
    return NC_OK;
}

static void fake_destroy(serve_engine *e) {
    fake_model *m = e->impl;
    if (m) {
        free(m->script);
        free(m->next_of);
        free(m);
    }
    tok_free(e->tok);
    e->impl = NULL;
    e->tok = NULL;
}

static nc_status fake_build(serve_engine *e, fake_model *m, const char *dir, nc_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fake_script.txt", dir);
    char *text;
    size_t len;
    NC_TRY(nc_read_file(path, &text, &len, err));
    nc_status st = tok_encode(e->tok, text, len, &m->script, &m->n_script, err);
    free(text);
    if (st != NC_OK) return nc_fail_prefix(err, "%s", path);
    if (m->n_script == 0) return nc_fail(err, NC_ERR_FORMAT, "%s: empty script", path);
    m->next_of = malloc((size_t)e->n_vocab * sizeof *m->next_of);
    if (!m->next_of) return nc_fail(err, NC_ERR_NOMEM, "fake engine: out of memory");
    unsigned char *seen = calloc((size_t)e->n_vocab, 1);
    if (!seen) return nc_fail(err, NC_ERR_NOMEM, "fake engine: out of memory");
    for (int v = 0; v < e->n_vocab; v++)
        m->next_of[v] = m->script[0];
    for (size_t i = 0; i < m->n_script; i++) {
        int32_t t = m->script[i];
        if (seen[t]) {
            free(seen);
            return nc_fail(err, NC_ERR_FORMAT, "%s: token %d occurs twice in the script", path,
                           (int)t);
        }
        seen[t] = 1;
        m->next_of[t] = i + 1 < m->n_script ? m->script[i + 1] : e->eog[0];
    }
    free(seen);
    return NC_OK;
}

nc_status serve_engine_open_fake(const char *dir, const serve_engine_options *opt,
                                 serve_engine *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    NC_TRY(tok_load(dir, &out->tok, err));
    out->kind = "fake";
    out->n_vocab = tok_vocab_size(out->tok);
    out->ctx_max = opt && opt->ctx > 0 ? opt->ctx : 4096;
    serve_engine_set_eog(out, NULL, 0);
    if (out->n_eog == 0) {
        tok_free(out->tok);
        out->tok = NULL;
        return nc_fail(err, NC_ERR_FORMAT, "%s: tokenizer has no <|im_end|> token", dir);
    }
    serve_engine_set_id(out, dir);
    out->seq_new = fake_seq_new;
    out->seq_free = fake_seq_free;
    out->seq_pos = fake_seq_pos;
    out->seq_truncate = fake_seq_truncate;
    out->step = fake_step;
    out->destroy = fake_destroy;
    fake_model *m = calloc(1, sizeof *m);
    if (!m) {
        fake_destroy(out);
        return nc_fail(err, NC_ERR_NOMEM, "fake engine: out of memory");
    }
    m->step_ms = opt ? opt->fake_step_ms : 0;
    out->impl = m;
    nc_status st = fake_build(out, m, dir, err);
    if (st != NC_OK) fake_destroy(out);
    return st;
}
