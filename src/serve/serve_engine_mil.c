/* The mil backend for the server: an ANE bundle (`nectar compile`) run by
 * the MIL interpreter through src/gen's engine_mil, which holds exactly one
 * sequence. So each slot opens its own gen_mil on the bundle, and a step
 * runs the busy slots' forwards one after another (correct; no sharing of
 * weight passes across slots on this backend). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/engine_mil.h"
#include "serve/serve_engine.h"

typedef struct mil_engine {
    char dir[4096];
    int n_threads;
} mil_engine;

typedef struct mil_seq {
    gen_mil *m;
    gen_engine e;
} mil_seq;

static nc_status m_seq_new(serve_engine *e, int ctx, void **out, nc_error *err) {
    (void)ctx; /* the bundle fixes its context (nectar compile --ctx) */
    mil_engine *me = e->impl;
    mil_seq *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "mil engine: out of memory for a sequence");
    nc_status st = gen_mil_open(me->dir, me->n_threads, &s->m, err);
    if (st != NC_OK) {
        free(s);
        return st;
    }
    s->e = gen_engine_mil(s->m);
    *out = s;
    return NC_OK;
}

static void m_seq_free(serve_engine *e, void *seq) {
    (void)e;
    mil_seq *s = seq;
    if (!s) return;
    gen_mil_free(s->m);
    free(s);
}

static int m_seq_pos(serve_engine *e, void *seq) {
    (void)e;
    mil_seq *s = seq;
    return s->e.pos(s->e.state);
}

static void m_seq_truncate(serve_engine *e, void *seq, int n_keep) {
    (void)e;
    mil_seq *s = seq;
    s->e.truncate(s->e.state, n_keep);
}

static nc_status m_step(serve_engine *e, serve_step_item *items, int n_items, nc_error *err) {
    (void)e;
    (void)err;
    for (int i = 0; i < n_items; i++) {
        mil_seq *s = items[i].seq;
        items[i].status = s->e.forward(s->e.model, s->e.state, items[i].tokens, items[i].n,
                                       items[i].logits, &items[i].err);
    }
    return NC_OK;
}

static void m_destroy(serve_engine *e) {
    free(e->impl);
    tok_free(e->tok);
    e->impl = NULL;
    e->tok = NULL;
}

nc_status serve_engine_open_mil(const char *dir, const serve_engine_options *opt, serve_engine *out,
                                nc_error *err) {
    memset(out, 0, sizeof *out);
    mil_engine *me = calloc(1, sizeof *me);
    if (!me) return nc_fail(err, NC_ERR_NOMEM, "mil engine: out of memory");
    snprintf(me->dir, sizeof me->dir, "%s", dir);
    me->n_threads = opt ? opt->n_threads : 0;
    /* One instance up front: it checks the bundle and gives its config. */
    gen_mil *probe = NULL;
    nc_status st = gen_mil_open(dir, me->n_threads, &probe, err);
    if (st == NC_OK) st = tok_load(dir, &out->tok, err);
    if (st != NC_OK) {
        gen_mil_free(probe);
        free(me);
        return st;
    }
    const lower_manifest *man = gen_mil_manifest(probe);
    out->impl = me;
    out->kind = "mil";
    out->n_vocab = man->cfg.vocab_size;
    out->ctx_max = man->ctx;
    serve_engine_set_eog(out, man->cfg.eos_token_ids, man->cfg.n_eos);
    serve_engine_set_id(out, dir);
    gen_mil_free(probe);
    out->seq_new = m_seq_new;
    out->seq_free = m_seq_free;
    out->seq_pos = m_seq_pos;
    out->seq_truncate = m_seq_truncate;
    out->step = m_step;
    out->destroy = m_destroy;
    return NC_OK;
}
