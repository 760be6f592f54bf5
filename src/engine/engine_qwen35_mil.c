/* qwen35-mil: a lowered Qwen3.5 bundle (nectar compile) run by the MIL
 * interpreter in fp16 mode. The host side is Qwen3's with the Qwen3.5
 * additions shared with qwen35-ane (qwen35_bundle_host.h), the named-buffer
 * dataflow Qwen3's (bundle_mil.h); what differs:
 *  - a sequence holds the KV cache of the full-attention layers only, plus
 *    per linear-attention layer the conv window [C][32] and the delta-rule
 *    state [nv][dk][dvp], bound as conv_state / delta_state (docs/qwen35.md);
 *  - a linear layer runs prefill_sS over a chunk of several tokens (its
 *    columns copied into order, the padding marked invalid), or step_s32
 *    for one token (its column copied to column 0 of a 32-wide x and back),
 *    then the layer's mlp_sS over the whole chunk;
 *  - RoPE is partial, and a recurrent state cannot be rewound: the shared
 *    host recomputes the cos/sin rows and replays after a truncation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/bundle_mil.h"
#include "engine/engines.h"
#include "engine/qwen35_bundle_host.h"
#include "lower/qwen35_lower.h"

typedef struct q35m_model {
    bm_model b;
    q35_host q;
    int slot[QWEN35_MAX_LAYERS];  /* index among the full or the linear layers */
    size_t kv_n, conv_n, delta_n; /* floats per layer: K (or V) cache, conv window, state */
    float *tok_x;                 /* [D][32]: the step's x */
    float *ord_x;                 /* [D][S_max]: a prefill chunk's x in order */
} q35m_model;

typedef struct q35m_seq {
    q35_seq q;      /* the position and token history; first */
    float *kc, *vc; /* [n_full][kv_n] */
    float *conv;    /* [n_linear][conv_n] */
    float *delta;   /* [n_linear][delta_n] */
} q35m_seq;

static void q35m_close(engine *e) {
    q35m_model *m = e->impl;
    if (!m) return;
    bm_free(&m->b);
    q35_host_free(&m->q);
    free(m->tok_x);
    free(m->ord_x);
    free(m);
    e->impl = NULL;
}

static nc_status full_layer(q35m_model *m, q35m_seq *s, int l, int S, nc_error *err) {
    qb_host *h = &m->b.h;
    size_t D = (size_t)m->q.cfg.hidden_size, hd = (size_t)m->q.cfg.head_dim;
    size_t ctx = (size_t)h->man.ctx;
    float *kc = s->kc + (size_t)m->slot[l] * m->kv_n, *vc = s->vc + (size_t)m->slot[l] * m->kv_n;
    bm_env env = {0};
    bm_env_put(&env, "x", h->x, D * S, h->x);
    bm_env_put(&env, "rope_cos", h->cs, hd * S, NULL);
    bm_env_put(&env, "rope_sin", h->sn, hd * S, NULL);
    bm_env_put(&env, "attn_mask", h->mask, (size_t)S * ctx, NULL);
    bm_env_put(&env, "kv_write", h->wr, ctx, NULL);
    bm_env_put(&env, "k_cache", kc, m->kv_n, kc);
    bm_env_put(&env, "v_cache", vc, m->kv_n, vc);
    return bm_run_layer(&m->b, l, S, &env, err);
}

/* A chunk of n > 1 tokens through prefill_sS: its columns in order, the
 * padding marked invalid, the new conv window picked from the last K-1
 * inputs (of the state when the chunk is shorter than that). */
static nc_status linear_prefill(q35m_model *m, float *cs, float *ds, int prog, int n, int p, int S,
                                nc_error *err) {
    qb_host *h = &m->b.h;
    size_t D = (size_t)m->q.cfg.hidden_size, W = LOWER_STEP_SEQ;
    memset(m->ord_x, 0, D * S * sizeof(float));
    for (int i = 0; i < n; i++)
        for (size_t d = 0; d < D; d++)
            m->ord_x[d * S + i] = h->x[d * S + (size_t)((p + i) % S)];
    q35_host_chunk_picks(&m->q, n, S);
    bm_env env = {0};
    bm_env_put(&env, "x", m->ord_x, D * S, m->ord_x);
    bm_env_put(&env, "valid", m->q.valid, (size_t)S, NULL);
    bm_env_put(&env, "conv_state", cs, m->conv_n, cs);
    bm_env_put(&env, "delta_state", ds, m->delta_n, ds);
    bm_env_put(&env, "conv_pick_state", m->q.pick_state, W * W, NULL);
    bm_env_put(&env, "conv_pick_new", m->q.pick_new, (size_t)S * W, NULL);
    char fn[32];
    snprintf(fn, sizeof fn, "prefill_s%d", S);
    NC_TRY(bm_run_named(&m->b, prog, fn, &env, err));
    for (int i = 0; i < n; i++)
        for (size_t d = 0; d < D; d++)
            h->x[d * S + (size_t)((p + i) % S)] = m->ord_x[d * S + i];
    return NC_OK;
}

/* One token (in column col of the chunk) through step_s32. */
static nc_status linear_step(q35m_model *m, float *cs, float *ds, int prog, size_t col, int S,
                             nc_error *err) {
    qb_host *h = &m->b.h;
    size_t D = (size_t)m->q.cfg.hidden_size, W = LOWER_STEP_SEQ;
    memset(m->tok_x, 0, D * W * sizeof(float));
    for (size_t d = 0; d < D; d++)
        m->tok_x[d * W] = h->x[d * S + col];
    bm_env env = {0};
    bm_env_put(&env, "x", m->tok_x, D * W, m->tok_x);
    bm_env_put(&env, "conv_state", cs, m->conv_n, cs);
    bm_env_put(&env, "delta_state", ds, m->delta_n, ds);
    char fn[32];
    snprintf(fn, sizeof fn, "step_s%d", LOWER_STEP_SEQ);
    NC_TRY(bm_run_named(&m->b, prog, fn, &env, err));
    for (size_t d = 0; d < D; d++)
        h->x[d * S + col] = m->tok_x[d * W];
    return NC_OK;
}

/* The mixer (prefill_sS for a chunk, step_s32 for one token), then the MLP
 * over the chunk. */
static nc_status linear_layer(q35m_model *m, q35m_seq *s, int l, int n, int p, int S,
                              nc_error *err) {
    qb_host *h = &m->b.h;
    float *cs = s->conv + (size_t)m->slot[l] * m->conv_n;
    float *ds = s->delta + (size_t)m->slot[l] * m->delta_n;
    int prog = m->b.layer_prog[l];
    if (n > 1)
        NC_TRY(linear_prefill(m, cs, ds, prog, n, p, S, err));
    else
        NC_TRY(linear_step(m, cs, ds, prog, (size_t)(p % S), S, err));
    bm_env env = {0};
    bm_env_put(&env, "x", h->x, (size_t)m->q.cfg.hidden_size * S, h->x);
    char fn[32];
    snprintf(fn, sizeof fn, "mlp_s%d", S);
    return bm_run_named(&m->b, prog, fn, &env, err);
}

static nc_status run_chunk(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                           nc_error *err) {
    q35m_model *m = user;
    q35m_seq *s = (q35m_seq *)seq;
    qb_host *h = &m->b.h;
    q35_host_rope(&m->q, h, n, p, S);
    for (int l = 0; l < m->b.L; l++) {
        NC_TRY(m->q.cfg.is_full[l] ? full_layer(m, s, l, S, err)
                                   : linear_layer(m, s, l, n, p, S, err));
        if (m->b.hook) {
            qb_host_rows(h, h->x, n, p, S);
            m->b.hook(m->b.hook_user, l, h->rows, n, m->q.cfg.hidden_size);
        }
    }
    return logits ? bm_head(&m->b, (p + n - 1) % S, S, logits, err) : NC_OK;
}

static nc_status reset_linear(void *user, engine_seq *seq, nc_error *err) {
    (void)err;
    const q35m_model *m = user;
    q35m_seq *s = (q35m_seq *)seq;
    size_t n_lin = (size_t)(m->q.cfg.num_hidden_layers - m->q.cfg.n_full);
    memset(s->conv, 0, n_lin * m->conv_n * sizeof(float));
    memset(s->delta, 0, n_lin * m->delta_n * sizeof(float));
    return NC_OK;
}

static nc_status q35m_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    (void)err;
    q35m_model *m = e->impl;
    return q35_host_step(&m->q, &m->b.h, items, n_items, run_chunk, reset_linear, m);
}

static void q35m_seq_free(engine *e, engine_seq *seq) {
    (void)e;
    q35m_seq *s = (q35m_seq *)seq;
    if (!s) return;
    free(s->kc);
    free(s->vc);
    free(s->conv);
    free(s->delta);
    q35_seq_release(&s->q);
    free(s);
}

static nc_status q35m_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    (void)ctx; /* the bundle fixes its context */
    q35m_model *m = e->impl;
    size_t n_full = (size_t)m->q.cfg.n_full, n_lin = (size_t)m->q.cfg.num_hidden_layers - n_full;
    q35m_seq *s = calloc(1, sizeof *s);
    if (s) {
        s->kc = calloc(n_full * m->kv_n + 1, sizeof(float));
        s->vc = calloc(n_full * m->kv_n + 1, sizeof(float));
        s->conv = calloc(n_lin * m->conv_n + 1, sizeof(float));
        s->delta = calloc(n_lin * m->delta_n + 1, sizeof(float));
    }
    if (!s || !s->kc || !s->vc || !s->conv || !s->delta || q35_seq_init(&s->q, &m->b.h, err)) {
        q35m_seq_free(e, (engine_seq *)s);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for a sequence (ctx %d)", m->b.h.dir,
                       m->b.h.man.ctx);
    }
    *out = (engine_seq *)s;
    return NC_OK;
}

static const engine_ops q35m_ops = {
    .seq_new = q35m_seq_new,
    .seq_free = q35m_seq_free,
    .seq_pos = qb_seq_pos,
    .seq_truncate = q35_seq_truncate,
    .step = q35m_step,
    .set_layer_hook = bm_set_layer_hook,
    .close = q35m_close,
};

nc_status engine_open_qwen35_mil(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err) {
    q35m_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->impl = m;
    e->ops = &q35m_ops;
    NC_TRY(bm_open(&m->b, dir, opt->n_threads, err));
    NC_TRY(q35_host_open(&m->q, dir, &m->b.h, err));
    const qwen35_config *c = &m->q.cfg;
    for (int l = 0, nf = 0, nl = 0; l < c->num_hidden_layers; l++)
        m->slot[l] = c->is_full[l] ? nf++ : nl++;
    m->kv_n = (size_t)c->num_key_value_heads * c->head_dim * m->b.h.man.ctx;
    m->conv_n = (size_t)lower_qwen35_conv_channels(c) * LOWER_STEP_SEQ;
    m->delta_n = (size_t)c->linear_num_value_heads * c->linear_key_head_dim * lower_qwen35_dvp(c);
    m->tok_x = malloc((size_t)c->hidden_size * LOWER_STEP_SEQ * sizeof *m->tok_x);
    m->ord_x = malloc((size_t)c->hidden_size * m->b.h.S_max * sizeof *m->ord_x);
    if (!m->tok_x || !m->ord_x) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    NC_TRY(engine_bundle_fill(e, dir, &m->b.h.man, opt, err));
    e->kv_bytes_per_token = q35_host_kv_bytes_per_token(&m->q);
    e->dims = qwen35_dims(&m->q.cfg);
    e->n_threads = nc_pool_threads(m->b.h.pool);
    return NC_OK;
}
