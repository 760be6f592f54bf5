/* The mil engine of every decoder family (qwen3-mil, llama-mil, gemma3-mil,
 * qwen35-mil): a lowered bundle (nectar compile) run by the MIL interpreter
 * in fp16 mode -- the numerics the ANE is asked for, on any machine. The
 * programs and their prepared interpreters belong to the engine; a
 * sequence is what each layer carries (decoder_bundle_host.h: a KV cache,
 * a sliding layer's window of one, a recurrent layer's conv window and
 * delta state, each as large as the layer's functions declare it, fp16
 * values held as floats) and its position, bound into the kernels by name
 * on every call, so any number of sequences share one set of interpreters.
 *
 * An attention layer runs the functions its program lists for the chunk's
 * bucket, in manifest order, as a dataflow over named buffers
 * (bundle_mil.h), so 4, 2 or 1 kernels per layer run through the same
 * loop. A recurrent layer (Qwen3.5's Gated DeltaNet) runs its mixer --
 * prefill_sS over a chunk of several tokens (its columns copied into
 * order, the padding marked invalid), or step_s32 for one token (its
 * column copied to column 0 of a 32-wide x and back) -- then its mlp_sS
 * over the whole chunk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/bundle_mil.h"
#include "engine/engines.h"
#include "lower/qwen35_lower.h"

typedef struct mil_model {
    bm_model b;           /* programs, interpreters, host side */
    size_t *off;          /* [L][DB_N_CARRIED]: each carried buffer's offset in a sequence */
    size_t n_state;       /* floats a sequence holds */
    float *tok_x, *ord_x; /* a recurrent layer's x: [D][32] for a step, [D][S_max] in order */
} mil_model;

typedef struct mil_seq {
    db_seq base;  /* the position; first */
    float *state; /* every layer's carried buffers (mil_model.off) */
} mil_seq;

static void mil_close(engine *e) {
    mil_model *m = e->impl;
    if (!m) return;
    bm_free(&m->b);
    free(m->off);
    free(m->tok_x);
    free(m->ord_x);
    free(m);
    e->impl = NULL;
}

/* Binds layer l's carried buffers of sequence s into env. */
static void put_carried(const mil_model *m, mil_seq *s, int l, bm_env *env) {
    for (int k = 0; k < DB_N_CARRIED; k++) {
        size_t i = (size_t)l * DB_N_CARRIED + (size_t)k, n = m->b.h.carried[i];
        if (n) bm_env_put(env, db_carried_names[k], s->state + m->off[i], n, s->state + m->off[i]);
    }
}

static nc_status attention_layer(mil_model *m, mil_seq *s, int l, int S, nc_error *err) {
    db_host *h = &m->b.h;
    size_t D = (size_t)h->man.cfg.hidden_size, hd = (size_t)h->man.cfg.head_dim;
    size_t ctx = (size_t)h->man.ctx;
    bm_env env = {0};
    bm_env_put(&env, "x", h->x, D * S, h->x);
    bm_env_put(&env, "rope_cos", h->cs, hd * S, NULL);
    bm_env_put(&env, "rope_sin", h->sn, hd * S, NULL);
    bm_env_put(&env, "attn_mask", h->mask, (size_t)S * ctx, NULL);
    bm_env_put(&env, "kv_write", h->wr, ctx, NULL);
    if (h->W) { /* the sliding layers' (Gemma 3) */
        bm_env_put(&env, "rope_cos_local", h->cs_l, hd * S, NULL);
        bm_env_put(&env, "rope_sin_local", h->sn_l, hd * S, NULL);
        bm_env_put(&env, "attn_mask_local", h->mask_l, (size_t)S * h->W, NULL);
        bm_env_put(&env, "kv_write_local", h->wr_l, (size_t)h->W, NULL);
    }
    put_carried(m, s, l, &env);
    return bm_run_layer(&m->b, l, S, &env, err);
}

/* A chunk of n > 1 tokens through prefill_sS: its columns in order, with
 * the host's valid mask and conv-window picks. */
static nc_status recurrent_prefill(mil_model *m, mil_seq *s, int l, int n, int p, int S,
                                   nc_error *err) {
    db_host *h = &m->b.h;
    size_t D = (size_t)h->man.cfg.hidden_size, W = LOWER_STEP_SEQ;
    memset(m->ord_x, 0, D * S * sizeof(float));
    for (int i = 0; i < n; i++)
        for (size_t d = 0; d < D; d++)
            m->ord_x[d * S + i] = h->x[d * S + (size_t)((p + i) % S)];
    bm_env env = {0};
    bm_env_put(&env, "x", m->ord_x, D * S, m->ord_x);
    bm_env_put(&env, "valid", h->valid, (size_t)S, NULL);
    put_carried(m, s, l, &env);
    bm_env_put(&env, "conv_pick_state", h->pick_state, W * W, NULL);
    bm_env_put(&env, "conv_pick_new", h->pick_new, (size_t)S * W, NULL);
    char fn[32];
    snprintf(fn, sizeof fn, "prefill_s%d", S);
    NC_TRY(bm_run_named(&m->b, m->b.layer_prog[l], fn, &env, err));
    for (int i = 0; i < n; i++)
        for (size_t d = 0; d < D; d++)
            h->x[d * S + (size_t)((p + i) % S)] = m->ord_x[d * S + i];
    return NC_OK;
}

/* One token (in column col of the chunk) through step_s32. */
static nc_status recurrent_step(mil_model *m, mil_seq *s, int l, size_t col, int S, nc_error *err) {
    db_host *h = &m->b.h;
    size_t D = (size_t)h->man.cfg.hidden_size, W = LOWER_STEP_SEQ;
    memset(m->tok_x, 0, D * W * sizeof(float));
    for (size_t d = 0; d < D; d++)
        m->tok_x[d * W] = h->x[d * S + col];
    bm_env env = {0};
    bm_env_put(&env, "x", m->tok_x, D * W, m->tok_x);
    put_carried(m, s, l, &env);
    char fn[32];
    snprintf(fn, sizeof fn, "step_s%d", LOWER_STEP_SEQ);
    NC_TRY(bm_run_named(&m->b, m->b.layer_prog[l], fn, &env, err));
    for (size_t d = 0; d < D; d++)
        h->x[d * S + col] = m->tok_x[d * W];
    return NC_OK;
}

/* The mixer (prefill_sS for a chunk, step_s32 for one token), then the MLP
 * over the chunk. */
static nc_status recurrent_layer(mil_model *m, mil_seq *s, int l, int n, int p, int S,
                                 nc_error *err) {
    db_host *h = &m->b.h;
    if (n > 1)
        NC_TRY(recurrent_prefill(m, s, l, n, p, S, err));
    else
        NC_TRY(recurrent_step(m, s, l, (size_t)(p % S), S, err));
    bm_env env = {0};
    bm_env_put(&env, "x", h->x, (size_t)h->man.cfg.hidden_size * S, h->x);
    char fn[32];
    snprintf(fn, sizeof fn, "mlp_s%d", S);
    return bm_run_named(&m->b, m->b.layer_prog[l], fn, &env, err);
}

static nc_status run_chunk(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                           nc_error *err) {
    mil_model *m = user;
    mil_seq *s = (mil_seq *)seq;
    db_host *h = &m->b.h;
    for (int l = 0; l < m->b.L; l++) {
        NC_TRY(db_host_recurrent(h, l) ? recurrent_layer(m, s, l, n, p, S, err)
                                       : attention_layer(m, s, l, S, err));
        if (m->b.hook) {
            db_host_rows(h, h->x, n, p, S);
            m->b.hook(m->b.hook_user, l, h->rows, n, h->man.cfg.hidden_size);
        }
    }
    return logits ? bm_head(&m->b, (p + n - 1) % S, S, logits, err) : NC_OK;
}

static nc_status reset_recurrent(void *user, engine_seq *seq, nc_error *err) {
    (void)err;
    const mil_model *m = user;
    mil_seq *s = (mil_seq *)seq;
    for (int l = 0; l < m->b.L; l++)
        for (int k = DB_CONV_STATE; k <= DB_DELTA_STATE; k++) {
            size_t i = (size_t)l * DB_N_CARRIED + (size_t)k;
            memset(s->state + m->off[i], 0, m->b.h.carried[i] * sizeof(float));
        }
    return NC_OK;
}

static void mil_seq_free(engine *e, engine_seq *seq) {
    (void)e;
    mil_seq *s = (mil_seq *)seq;
    if (!s) return;
    db_seq_release(&s->base);
    free(s->state);
    free(s);
}

static nc_status mil_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    (void)ctx; /* the bundle fixes its context (engine_open checked a wanted one) */
    mil_model *m = e->impl;
    mil_seq *s = calloc(1, sizeof *s);
    if (s) s->state = calloc(m->n_state + 1, sizeof(float));
    if (!s || !s->state) {
        mil_seq_free(e, (engine_seq *)s);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for a sequence (ctx %d)", m->b.h.dir,
                       m->b.h.man.ctx);
    }
    nc_status st = db_seq_init(&s->base, &m->b.h, err);
    if (st != NC_OK) { /* its own message */
        mil_seq_free(e, (engine_seq *)s);
        return st;
    }
    *out = (engine_seq *)s;
    return NC_OK;
}

/* The interpreter has no batch across caches: item after item. */
static nc_status mil_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    (void)err;
    mil_model *m = e->impl;
    return db_host_step(&m->b.h, items, n_items, run_chunk, reset_recurrent, m);
}

static const engine_ops mil_ops = {
    .seq_new = mil_seq_new,
    .seq_free = mil_seq_free,
    .seq_pos = db_seq_pos,
    .seq_truncate = db_seq_truncate,
    .step = mil_step,
    .set_layer_hook = bm_set_layer_hook,
    .close = mil_close,
};

nc_status engine_open_bundle_mil(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err) {
    mil_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->impl = m;
    e->ops = &mil_ops;
    NC_TRY(bm_open(&m->b, dir, e->family, opt->n_threads, err));
    const db_host *h = &m->b.h;
    size_t n = (size_t)m->b.L * DB_N_CARRIED;
    m->off = malloc(n * sizeof *m->off);
    if (!m->off) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        m->off[i] = m->n_state;
        m->n_state += h->carried[i];
    }
    if (h->n_recurrent) {
        size_t D = (size_t)h->man.cfg.hidden_size;
        m->tok_x = malloc(D * LOWER_STEP_SEQ * sizeof *m->tok_x);
        m->ord_x = malloc(D * (size_t)h->S_max * sizeof *m->ord_x);
        if (!m->tok_x || !m->ord_x) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    return db_host_fill_engine(h, e, opt, 0, err); /* fp16 values held as floats */
}
