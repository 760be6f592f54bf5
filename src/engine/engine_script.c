/* The "script" engine: a deterministic stand-in for a model, so the
 * generation pipeline, the server's batching and streaming can be tested
 * exactly without weights. It "recites" a script:
 * the script's tokens S[0..L) are all distinct, and after a token t the
 * most likely next token is the one that follows t in S (after the last
 * script token: <|im_end|>; after a token not in S: S[0]). Logits are 0
 * except 6.0 on that token, plus 3.0 on token (fnv1a(history) % n_vocab),
 * so logprobs depend on the whole history and a slot that mixed up two
 * sequences' caches would show it. tools/make_serve_fixtures.py computes
 * the same function independently to make the expected outputs. The folder
 * holds tokenizer.json and fake_script.txt. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mmap.h"
#include "engine/engines.h"
#include "text/tokenizer.h"

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

static nc_status fake_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    if (ctx <= 0 || ctx > e->ctx_max) ctx = e->ctx_max;
    fake_seq *s = calloc(1, sizeof *s);
    if (s) s->tokens = malloc((size_t)ctx * sizeof *s->tokens);
    if (!s || !s->tokens) {
        free(s);
        return nc_fail(err, NC_ERR_NOMEM, "script engine: out of memory for a sequence");
    }
    s->ctx = ctx;
    *out = (engine_seq *)s;
    return NC_OK;
}

static void fake_seq_free(engine *e, engine_seq *seq) {
    (void)e;
    fake_seq *s = (fake_seq *)seq;
    free(s->tokens);
    free(s);
}

static int fake_seq_pos(const engine *e, const engine_seq *seq) {
    (void)e;
    return ((const fake_seq *)seq)->n;
}

static int fake_seq_truncate(engine *e, engine_seq *seq, int n_keep) {
    (void)e;
    fake_seq *s = (fake_seq *)seq;
    if (n_keep >= 0 && n_keep < s->n) s->n = n_keep;
    return s->n;
}

static nc_status fake_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    (void)err;
    fake_model *m = e->impl;
    if (m->step_ms > 0) { /* the whole step time, even across signals */
        struct timespec ts = {m->step_ms / 1000, (long)(m->step_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
        }
    }
    for (int i = 0; i < n_items; i++) {
        engine_step_item *it = &items[i];
        fake_seq *s = (fake_seq *)it->seq;
        it->status = NC_OK;
        if (it->n <= 0 || s->n + it->n > s->ctx) {
            it->status = nc_fail(&it->err, NC_ERR_RANGE,
                                 "script engine: %d tokens do not fit the context (%d of %d used)",
                                 it->n, s->n, s->ctx);
            continue;
        }
        for (int k = 0; k < it->n; k++) {
            if (it->tokens[k] < 0 || it->tokens[k] >= e->n_vocab) {
                it->status = nc_fail(&it->err, NC_ERR_INVALID,
                                     "script engine: token id %d out of range", (int)it->tokens[k]);
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

static void fake_close(engine *e) {
    fake_model *m = e->impl;
    if (!m) return;
    free(m->script);
    free(m->next_of);
    free(m);
    e->impl = NULL;
}

static nc_status fake_build(engine *e, fake_model *m, const tok_tokenizer *tok, const char *dir,
                            nc_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fake_script.txt", dir);
    char *text;
    size_t len;
    NC_TRY(nc_read_file(path, &text, &len, err));
    nc_status st = tok_encode(tok, text, len, &m->script, &m->n_script, err);
    free(text);
    if (st != NC_OK) return nc_fail_prefix(err, "%s", path);
    if (m->n_script == 0) return nc_fail(err, NC_ERR_FORMAT, "%s: empty script", path);
    m->next_of = malloc((size_t)e->n_vocab * sizeof *m->next_of);
    if (!m->next_of) return nc_fail(err, NC_ERR_NOMEM, "script engine: out of memory");
    unsigned char *seen = calloc((size_t)e->n_vocab, 1);
    if (!seen) return nc_fail(err, NC_ERR_NOMEM, "script engine: out of memory");
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
        m->next_of[t] = i + 1 < m->n_script ? m->script[i + 1] : e->eos_ids[0];
    }
    free(seen);
    return NC_OK;
}

static const engine_ops fake_ops = {
    .seq_new = fake_seq_new,
    .seq_free = fake_seq_free,
    .seq_pos = fake_seq_pos,
    .seq_truncate = fake_seq_truncate,
    .step = fake_step,
    .close = fake_close,
};

nc_status engine_open_script(const char *dir, const engine_options *opt, engine *e, nc_error *err) {
    fake_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "script engine: out of memory");
    e->impl = m;
    e->ops = &fake_ops;
    m->step_ms = opt->fake_step_ms;
    tok_tokenizer *tok = NULL;
    NC_TRY(tok_load(dir, &tok, err));
    e->n_vocab = tok_vocab_size(tok);
    e->ctx_max = opt->ctx > 0 ? opt->ctx : 4096;
    /* its family's end of turn (the engine table gives it Qwen3's) */
    const char *end_text = e->family->end_tokens[0];
    int32_t end = end_text ? tok_find(tok, end_text) : -1;
    nc_status st = end >= 0 ? NC_OK
                            : nc_fail(err, NC_ERR_FORMAT, "%s: tokenizer has no %s token", dir,
                                      end_text ? end_text : "end-of-turn");
    engine_set_eos(e, &end, 1);
    if (st == NC_OK) st = fake_build(e, m, tok, dir, err);
    tok_free(tok);
    return st;
}
