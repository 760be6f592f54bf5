/* qwen35-mil: a lowered Qwen3.5 bundle (nectar compile) run by the MIL
 * interpreter in fp16 mode. The host side and the named-buffer dataflow are
 * Qwen3's (qwen3_bundle_host.h, bundle_mil.h); what differs:
 *  - a sequence holds the KV cache of the full-attention layers only, plus
 *    per linear-attention layer the conv window [C][32] and the delta-rule
 *    state [nv][dk][dvp], bound as conv_state / delta_state (docs/qwen35.md);
 *  - a linear layer runs prefill_sS over a chunk of several tokens (its
 *    columns copied into order, the padding marked invalid), or step_s32
 *    for one token (its column copied to column 0 of a 32-wide x and back),
 *    then the layer's mlp_sS over the whole chunk;
 *  - RoPE is partial: the host's cos/sin rows are recomputed for
 *    rotary_dim with 1/0 past it (the programs' rotation matrix is zero
 *    there);
 *  - a recurrent state cannot be rewound: truncation zeroes the linear
 *    states and the next step replays the kept tokens first (their KV rows
 *    are rewritten identically), so seq_truncate keeps exactly n_keep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/bundle_mil.h"
#include "engine/engines.h"
#include "lower/qwen35_lower.h"
#include "models/qwen35.h"

typedef struct q35m_model {
    bm_model b;
    qwen35_config cfg;            /* the bundle's copy of config.json */
    int slot[QWEN35_MAX_LAYERS];  /* index among the full or the linear layers */
    size_t kv_n, conv_n, delta_n; /* floats per layer: K (or V) cache, conv window, state */
    float *inv_freq;              /* rotary_dim / 2 */
    float *tok_x;                 /* [D][32]: the step's x */
    float *ord_x, *valid;         /* [D][S_max], [S_max]: a prefill chunk's x in order */
    float *pick_state, *pick_new; /* [32][32], [S_max][32]: the conv window's selection */
    int32_t *replay;              /* [ctx]: kept tokens + new ones of one step */
} q35m_model;

typedef struct q35m_seq {
    qb_seq base;     /* the position; first */
    int lin_pos;     /* tokens the linear states have absorbed (<= pos) */
    float *kc, *vc;  /* [n_full][kv_n] */
    float *conv;     /* [n_linear][conv_n] */
    float *delta;    /* [n_linear][delta_n] */
    int32_t *tokens; /* [ctx] */
} q35m_seq;

static void q35m_close(engine *e) {
    q35m_model *m = e->impl;
    if (!m) return;
    bm_free(&m->b);
    free(m->inv_freq);
    free(m->tok_x);
    free(m->ord_x);
    free(m->valid);
    free(m->pick_state);
    free(m->pick_new);
    free(m->replay);
    free(m);
    e->impl = NULL;
}

/* cos/sin of the chunk's token columns for partial rotary. */
static void rope_partial(q35m_model *m, int n, int p, int S) {
    qb_host *h = &m->b.h;
    int hd = m->cfg.head_dim, rd = m->cfg.rotary_dim;
    for (int i = 0; i < n; i++) {
        int col = (p + i) % S;
        for (int d = 0; d < hd; d++) {
            float a = d < rd ? (float)(p + i) * m->inv_freq[d % (rd / 2)] : 0.0f;
            h->cs[(size_t)d * S + col] = d < rd ? (float)cos((double)a) : 1.0f;
            h->sn[(size_t)d * S + col] = d < rd ? (float)sin((double)a) : 0.0f;
        }
    }
}

static nc_status full_layer(q35m_model *m, q35m_seq *s, int l, int S, nc_error *err) {
    qb_host *h = &m->b.h;
    size_t D = (size_t)m->cfg.hidden_size, hd = (size_t)m->cfg.head_dim;
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
    return bm_run_bucket(&m->b, m->b.layer_prog[l], S, &env, err);
}

/* A chunk of n > 1 tokens through prefill_sS: its columns in order, the
 * padding marked invalid, the new conv window picked from the last K-1
 * inputs (of the state when the chunk is shorter than that). */
static nc_status linear_prefill(q35m_model *m, float *cs, float *ds, int prog, int n, int p, int S,
                                nc_error *err) {
    qb_host *h = &m->b.h;
    size_t D = (size_t)m->cfg.hidden_size, W = LOWER_STEP_SEQ;
    int K = m->cfg.linear_conv_kernel_dim;
    memset(m->ord_x, 0, D * S * sizeof(float));
    for (int i = 0; i < S; i++)
        m->valid[i] = i < n ? 1.0f : 0.0f;
    for (int i = 0; i < n; i++)
        for (size_t d = 0; d < D; d++)
            m->ord_x[d * S + i] = h->x[d * S + (size_t)((p + i) % S)];
    memset(m->pick_state, 0, W * W * sizeof(float));
    memset(m->pick_new, 0, (size_t)S * W * sizeof(float));
    for (int k = 0; k < K - 1; k++) {
        int at = n - (K - 1) + k; /* the input kept in column k, from the chunk's start */
        if (at < 0)
            m->pick_state[(size_t)(K - 1 + at) * W + k] = 1.0f;
        else
            m->pick_new[(size_t)at * W + k] = 1.0f;
    }
    bm_env env = {0};
    bm_env_put(&env, "x", m->ord_x, D * S, m->ord_x);
    bm_env_put(&env, "valid", m->valid, (size_t)S, NULL);
    bm_env_put(&env, "conv_state", cs, m->conv_n, cs);
    bm_env_put(&env, "delta_state", ds, m->delta_n, ds);
    bm_env_put(&env, "conv_pick_state", m->pick_state, W * W, NULL);
    bm_env_put(&env, "conv_pick_new", m->pick_new, (size_t)S * W, NULL);
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
    size_t D = (size_t)m->cfg.hidden_size, W = LOWER_STEP_SEQ;
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
    bm_env_put(&env, "x", h->x, (size_t)m->cfg.hidden_size * S, h->x);
    char fn[32];
    snprintf(fn, sizeof fn, "mlp_s%d", S);
    return bm_run_named(&m->b, prog, fn, &env, err);
}

static nc_status run_chunk(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                           nc_error *err) {
    q35m_model *m = user;
    q35m_seq *s = (q35m_seq *)seq;
    qb_host *h = &m->b.h;
    rope_partial(m, n, p, S);
    for (int l = 0; l < m->b.L; l++) {
        NC_TRY(m->cfg.is_full[l] ? full_layer(m, s, l, S, err)
                                 : linear_layer(m, s, l, n, p, S, err));
        if (m->b.hook) {
            qb_host_rows(h, h->x, n, p, S);
            m->b.hook(m->b.hook_user, l, h->rows, n, m->cfg.hidden_size);
        }
    }
    return logits ? bm_head(&m->b, (p + n - 1) % S, S, logits, err) : NC_OK;
}

static void reset_linear(const q35m_model *m, q35m_seq *s) {
    size_t n_lin = (size_t)(m->cfg.num_hidden_layers - m->cfg.n_full);
    memset(s->conv, 0, n_lin * m->conv_n * sizeof(float));
    memset(s->delta, 0, n_lin * m->delta_n * sizeof(float));
    s->lin_pos = 0;
}

/* Item after item; an item first replays what a truncation left for the
 * linear states (tokens [lin_pos, pos)), then its own tokens. */
static nc_status q35m_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    (void)err;
    q35m_model *m = e->impl;
    for (int i = 0; i < n_items; i++) {
        engine_step_item it = items[i];
        q35m_seq *s = (q35m_seq *)it.seq;
        int pos = s->base.pos, back = pos - s->lin_pos;
        items[i].status = qb_host_check(&m->b.h, it.tokens, it.n, pos, &items[i].err);
        if (items[i].status != NC_OK || it.n == 0) continue; /* nothing changed */
        if (back > 0) {
            memcpy(m->replay, s->tokens + s->lin_pos, (size_t)back * sizeof(int32_t));
            memcpy(m->replay + back, it.tokens, (size_t)it.n * sizeof(int32_t));
            it.tokens = m->replay;
            it.n += back;
            s->base.pos = s->lin_pos;
        }
        qb_host_step(&m->b.h, &it, 1, run_chunk, m);
        items[i].status = it.status;
        items[i].err = it.err;
        if (it.status == NC_OK) {
            memcpy(s->tokens + s->lin_pos, it.tokens, (size_t)it.n * sizeof(int32_t));
            s->lin_pos = s->base.pos;
        } else { /* the linear states may be part-way: rebuilt by the next step */
            s->base.pos = pos;
            reset_linear(m, s);
        }
    }
    return NC_OK;
}

static int q35m_truncate(engine *e, engine_seq *seq, int n_keep) {
    q35m_seq *s = (q35m_seq *)seq;
    if (n_keep < 0 || n_keep >= s->base.pos) return s->base.pos;
    s->base.pos = n_keep;
    reset_linear(e->impl, s);
    return n_keep;
}

static void q35m_seq_free(engine *e, engine_seq *seq) {
    (void)e;
    q35m_seq *s = (q35m_seq *)seq;
    if (!s) return;
    free(s->kc);
    free(s->vc);
    free(s->conv);
    free(s->delta);
    free(s->tokens);
    free(s);
}

static nc_status q35m_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    (void)ctx; /* the bundle fixes its context */
    q35m_model *m = e->impl;
    size_t n_full = (size_t)m->cfg.n_full, n_lin = (size_t)m->cfg.num_hidden_layers - n_full;
    q35m_seq *s = calloc(1, sizeof *s);
    if (s) {
        s->kc = calloc(n_full * m->kv_n + 1, sizeof(float));
        s->vc = calloc(n_full * m->kv_n + 1, sizeof(float));
        s->conv = calloc(n_lin * m->conv_n + 1, sizeof(float));
        s->delta = calloc(n_lin * m->delta_n + 1, sizeof(float));
        s->tokens = calloc((size_t)m->b.h.man.ctx, sizeof(int32_t));
    }
    if (!s || !s->kc || !s->vc || !s->conv || !s->delta || !s->tokens) {
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
    .seq_truncate = q35m_truncate,
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
    NC_TRY(qwen35_config_load(dir, &m->cfg, err));
    NC_TRY(bm_open(&m->b, dir, opt->n_threads, err));
    const qwen35_config *c = &m->cfg;
    const qwen3_config *shape = &m->b.h.man.cfg;
    if (shape->hidden_size != c->hidden_size || shape->num_hidden_layers != c->num_hidden_layers ||
        shape->head_dim != c->head_dim || shape->vocab_size != c->vocab_size)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: manifest.json and config.json describe different models", dir);
    for (int l = 0, nf = 0, nl = 0; l < c->num_hidden_layers; l++)
        m->slot[l] = c->is_full[l] ? nf++ : nl++;
    int ctx = m->b.h.man.ctx;
    m->kv_n = (size_t)c->num_key_value_heads * c->head_dim * ctx;
    m->conv_n = (size_t)lower_qwen35_conv_channels(c) * LOWER_STEP_SEQ;
    m->delta_n = (size_t)c->linear_num_value_heads * c->linear_key_head_dim * lower_qwen35_dvp(c);
    m->inv_freq = malloc((size_t)c->rotary_dim / 2 * sizeof *m->inv_freq);
    m->tok_x = malloc((size_t)c->hidden_size * LOWER_STEP_SEQ * sizeof *m->tok_x);
    size_t smax = (size_t)m->b.h.S_max, W = LOWER_STEP_SEQ;
    m->ord_x = malloc((size_t)c->hidden_size * smax * sizeof *m->ord_x);
    m->valid = malloc(smax * sizeof *m->valid);
    m->pick_state = malloc(W * W * sizeof *m->pick_state);
    m->pick_new = malloc(smax * W * sizeof *m->pick_new);
    m->replay = malloc((size_t)ctx * sizeof *m->replay);
    if (!m->inv_freq || !m->tok_x || !m->replay || !m->ord_x || !m->valid || !m->pick_state ||
        !m->pick_new)
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    /* as transformers computes it: theta^(-2i/rotary_dim) in fp32 */
    for (int i = 0; i < c->rotary_dim / 2; i++)
        m->inv_freq[i] =
            (float)(1.0 / pow((double)c->rope_theta, (double)(2 * i) / (double)c->rotary_dim));
    NC_TRY(engine_bundle_fill(e, dir, &m->b.h.man, opt, err));
    /* only the full-attention layers keep K and V per token (fp16 values held as floats) */
    e->kv_bytes_per_token =
        2 * sizeof(float) * (size_t)c->n_full * c->num_key_value_heads * (size_t)c->head_dim;
    e->n_threads = nc_pool_threads(m->b.h.pool);
    return NC_OK;
}
