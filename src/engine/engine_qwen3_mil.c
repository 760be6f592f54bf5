/* qwen3-mil: a lowered Qwen3 bundle (nectar compile) run by the MIL
 * interpreter in fp16 mode -- the numerics the ANE is asked for, on any
 * machine. The programs and their prepared interpreters belong to the
 * engine; a sequence is its KV cache ([L][kvd * ctx] each for K and V, fp16
 * values held as floats) and its position, bound into the kernels by name
 * on every call, so any number of sequences share one set of interpreters.
 *
 * A layer runs the functions its program lists for the chunk's bucket, in
 * manifest order, as a dataflow over named buffers (bundle_mil.h): the
 * host's x, rope_cos, rope_sin, attn_mask, kv_write and the sequence's
 * k_cache / v_cache are bound by name, so 4, 2 or 1 kernels per layer run
 * through the same loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/bundle_mil.h"
#include "engine/engines.h"

typedef struct mil_model {
    bm_model b; /* programs, interpreters, host side */
} mil_model;

typedef struct mil_seq {
    qb_seq base;    /* the position; first */
    float *kc, *vc; /* [L][kvd * ctx] */
} mil_seq;

static void mil_close(engine *e) {
    mil_model *m = e->impl;
    if (!m) return;
    bm_free(&m->b);
    free(m);
    e->impl = NULL;
}

static nc_status run_layer(mil_model *m, mil_seq *s, int l, int S, nc_error *err) {
    qb_host *h = &m->b.h;
    const qwen3_config *c = &h->man.cfg;
    size_t D = (size_t)c->hidden_size, hd = (size_t)c->head_dim, ctx = (size_t)h->man.ctx;
    size_t kvd = (size_t)c->num_key_value_heads * hd;
    float *kc = s->kc + (size_t)l * kvd * ctx, *vc = s->vc + (size_t)l * kvd * ctx;
    /* a sliding layer (Gemma 3): its W-long cache, the first W of its slot */
    size_t kv_len = qwen3_layer_sliding(c, l) ? (size_t)h->W : ctx;
    bm_env env = {0};
    bm_env_put(&env, "x", h->x, D * S, h->x);
    bm_env_put(&env, "rope_cos", h->cs, hd * S, NULL);
    bm_env_put(&env, "rope_sin", h->sn, hd * S, NULL);
    bm_env_put(&env, "attn_mask", h->mask, (size_t)S * ctx, NULL);
    bm_env_put(&env, "kv_write", h->wr, ctx, NULL);
    if (h->W) {
        bm_env_put(&env, "rope_cos_local", h->cs_l, hd * S, NULL);
        bm_env_put(&env, "rope_sin_local", h->sn_l, hd * S, NULL);
        bm_env_put(&env, "attn_mask_local", h->mask_l, (size_t)S * h->W, NULL);
        bm_env_put(&env, "kv_write_local", h->wr_l, (size_t)h->W, NULL);
    }
    bm_env_put(&env, "k_cache", kc, kvd * kv_len, kc);
    bm_env_put(&env, "v_cache", vc, kvd * kv_len, vc);
    return bm_run_layer(&m->b, l, S, &env, err);
}

static nc_status run_chunk(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                           nc_error *err) {
    mil_model *m = user;
    qb_host *h = &m->b.h;
    for (int l = 0; l < m->b.L; l++) {
        NC_TRY(run_layer(m, (mil_seq *)seq, l, S, err));
        if (m->b.hook) {
            qb_host_rows(h, h->x, n, p, S);
            m->b.hook(m->b.hook_user, l, h->rows, n, h->man.cfg.hidden_size);
        }
    }
    return logits ? bm_head(&m->b, (p + n - 1) % S, S, logits, err) : NC_OK;
}

static nc_status mil_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    (void)ctx; /* the bundle fixes its context (engine_open checked a wanted one) */
    mil_model *m = e->impl;
    const qwen3_config *c = &m->b.h.man.cfg;
    size_t n = (size_t)m->b.L * c->num_key_value_heads * c->head_dim * m->b.h.man.ctx;
    mil_seq *s = calloc(1, sizeof *s);
    if (s) s->kc = calloc(n, sizeof(float));
    if (s && s->kc) s->vc = calloc(n, sizeof(float));
    if (!s || !s->kc || !s->vc) {
        if (s) free(s->kc);
        free(s);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the KV cache (ctx %d)", m->b.h.dir,
                       m->b.h.man.ctx);
    }
    qb_seq_init(&s->base, &m->b.h);
    *out = (engine_seq *)s;
    return NC_OK;
}

static void mil_seq_free(engine *e, engine_seq *seq) {
    (void)e;
    mil_seq *s = (mil_seq *)seq;
    free(s->kc);
    free(s->vc);
    free(s);
}

/* The interpreter has no batch across caches: item after item. */
static nc_status mil_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    (void)err;
    mil_model *m = e->impl;
    return qb_host_step(&m->b.h, items, n_items, run_chunk, m);
}

static const engine_ops mil_ops = {
    .seq_new = mil_seq_new,
    .seq_free = mil_seq_free,
    .seq_pos = qb_seq_pos,
    .seq_truncate = qb_seq_truncate,
    .step = mil_step,
    .set_layer_hook = bm_set_layer_hook,
    .close = mil_close,
};

nc_status engine_open_qwen3_mil(const char *dir, const engine_options *opt, engine *e,
                                nc_error *err) {
    mil_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->impl = m;
    e->ops = &mil_ops;
    NC_TRY(bm_open(&m->b, dir, opt->n_threads, err));
    NC_TRY(engine_bundle_fill(e, dir, &m->b.h.man, opt, err));
    e->kv_bytes_per_token *= 2; /* fp16 values held as floats */
    e->n_threads = nc_pool_threads(m->b.h.pool);
    return NC_OK;
}
