/* The decision model's forward pass, in the order of docs/decision.md:
 * encoder -> type embeddings -> H head layers -> marker selection ->
 * scorer -> raw and calibrated marker probabilities -> features from the raw
 * ones -> action head. fp32 throughout, following tools/decision_ref.py
 * operation by operation (the parity tests compare probabilities to 1e-4). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_ops.h"
#include "decide/decision_impl.h"

void decision_linear_rows(const decision_model *m, const decision_linear *l, const float *x, int n,
                          float *y) {
    int in = l->w.cols, out = l->w.rows;
    cpu_act a = cpu_act_rows(x, (size_t)in, n, in, NULL, NULL);
    cpu_matmul_act(m->pool, m->kern, &l->w, &a, y, (size_t)out);
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++)
            y[(size_t)r * (size_t)out + (size_t)o] += l->b[o];
}

/* torch.nn.LayerNorm with weight and bias, population variance. */
static void layernorm_rows(float *out, const float *x, const float *w, const float *b, int n, int d,
                           float eps) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * (size_t)d;
        float *o = out + (size_t)r * (size_t)d;
        double mu = 0, var = 0;
        for (int i = 0; i < d; i++)
            mu += xr[i];
        mu /= d;
        for (int i = 0; i < d; i++)
            var += (xr[i] - mu) * (xr[i] - mu);
        float inv = (float)(1.0 / sqrt(var / d + (double)eps));
        for (int i = 0; i < d; i++)
            o[i] = ((float)(xr[i] - mu) * inv) * w[i] + b[i];
    }
}

typedef struct attn_job {
    const decision_model *m;
    const float *qkv; /* [batch * seq, 3D] */
    const int32_t *mask;
    float *out;    /* [batch * seq, D] */
    float *scores; /* [batch * heads][seq] */
    int seq;
} attn_job;

/* One (row, head): every query against the row's real keys. */
static void attn_task(void *ctx, int task, int thread) {
    (void)thread;
    const attn_job *j = ctx;
    int d = j->m->cfg.hidden_size, nh = j->m->cfg.head_heads, hd = d / nh, seq = j->seq;
    int b = task / nh, h = task % nh;
    float scale = 1.0f / sqrtf((float)hd);
    float *s = j->scores + (size_t)task * (size_t)seq;
    for (int q = 0; q < seq; q++) {
        const float *qv = j->qkv + ((size_t)b * (size_t)seq + (size_t)q) * 3 * (size_t)d +
                          (size_t)h * (size_t)hd;
        float mx = -INFINITY;
        for (int k = 0; k < seq; k++) {
            if (j->mask && !j->mask[(size_t)b * (size_t)seq + (size_t)k]) {
                s[k] = -INFINITY;
                continue;
            }
            const float *kv = j->qkv + ((size_t)b * (size_t)seq + (size_t)k) * 3 * (size_t)d +
                              (size_t)d + (size_t)h * (size_t)hd;
            float dot = 0;
            for (int c = 0; c < hd; c++)
                dot += qv[c] * kv[c];
            s[k] = dot * scale;
            if (s[k] > mx) mx = s[k];
        }
        float sum = 0;
        for (int k = 0; k < seq; k++) {
            s[k] = s[k] == -INFINITY ? 0.0f : expf(s[k] - mx);
            sum += s[k];
        }
        float *o = j->out + ((size_t)b * (size_t)seq + (size_t)q) * (size_t)d + (size_t)h * (size_t)hd;
        memset(o, 0, (size_t)hd * sizeof *o);
        for (int k = 0; k < seq; k++) {
            if (s[k] == 0) continue;
            const float *vv = j->qkv + ((size_t)b * (size_t)seq + (size_t)k) * 3 * (size_t)d +
                              2 * (size_t)d + (size_t)h * (size_t)hd;
            float p = s[k] / sum;
            for (int c = 0; c < hd; c++)
                o[c] += p * vv[c];
        }
    }
}

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

/* x [rows, D] through one head layer, pre- or post-norm. */
static void head_layer(decision_model *m, const decision_layer *L, float *x, const int32_t *mask,
                       int batch, int seq) {
    const decision_config *c = &m->cfg;
    int n = batch * seq, d = c->hidden_size;
    size_t nd = (size_t)n * (size_t)d;
    const float *in = x;
    if (c->head_pre_norm) {
        layernorm_rows(m->xn, x, L->attn_norm_w, L->attn_norm_b, n, d, c->head_norm_eps);
        in = m->xn;
    }
    decision_linear_rows(m, &L->qkv, in, n, m->qkv);
    attn_job j = {m, m->qkv, mask, m->att, m->scores, seq};
    nc_pool_for(m->pool, batch * c->head_heads, attn_task, &j);
    decision_linear_rows(m, &L->out, m->att, n, m->xn);
    add_rows(x, m->xn, nd);
    if (!c->head_pre_norm) layernorm_rows(x, x, L->attn_norm_w, L->attn_norm_b, n, d, c->head_norm_eps);
    in = x;
    if (c->head_pre_norm) {
        layernorm_rows(m->xn, x, L->mlp_norm_w, L->mlp_norm_b, n, d, c->head_norm_eps);
        in = m->xn;
    }
    decision_linear_rows(m, &L->mlp_in, in, n, m->mid);
    m->kern->gelu(m->mid, m->mid, NULL, (size_t)n * (size_t)c->head_intermediate);
    decision_linear_rows(m, &L->mlp_out, m->mid, n, m->att);
    add_rows(x, m->att, nd);
    if (!c->head_pre_norm) layernorm_rows(x, x, L->mlp_norm_w, L->mlp_norm_b, n, d, c->head_norm_eps);
}

/* Markers and type ids for every row: the caller's, checked, or derived. */
static nc_status resolve_inputs(decision_model *m, const decision_io *io, nc_error *err) {
    const decision_config *c = &m->cfg;
    int K = c->num_markers, seq = io->seq;
    for (int b = 0; b < io->batch; b++) {
        const int32_t *ids = io->ids + (size_t)b * (size_t)seq;
        const int32_t *mask = io->mask ? io->mask + (size_t)b * (size_t)seq : NULL;
        int32_t *mk = m->markers + (size_t)b * (size_t)K;
        if (io->markers) {
            memcpy(mk, io->markers + (size_t)b * (size_t)K, (size_t)K * sizeof *mk);
            for (int k = 0; k < K; k++)
                if (mk[k] < 0 || mk[k] >= seq || (mask && !mask[mk[k]]))
                    return nc_fail(err, NC_ERR_INVALID,
                                   "row %d: marker %d at position %d is not a real token", b + 1,
                                   k + 1, mk[k]);
        } else {
            nc_status st = decision_find_markers(c, ids, mask, seq, mk, err);
            if (st != NC_OK) {
                nc_fail_prefix(err, "row %d", b + 1); /* err may be NULL: keep st */
                return st;
            }
        }
        int32_t *ty = m->types + (size_t)b * (size_t)seq;
        if (!io->types) {
            decision_type_ids(c, mk, mask, seq, ty);
            continue;
        }
        memcpy(ty, io->types + (size_t)b * (size_t)seq, (size_t)seq * sizeof *ty);
        for (int t = 0; t < seq; t++)
            if (ty[t] < 0 || ty[t] >= c->type_vocab_size)
                return nc_fail(err, NC_ERR_INVALID,
                               "row %d: type id %d at position %d is outside [0, %d)", b + 1,
                               ty[t], t, c->type_vocab_size);
    }
    return NC_OK;
}

nc_status decision_forward(decision_model *m, const decision_io *io, nc_error *err) {
    const decision_config *c = &m->cfg;
    if (io->batch < 1 || io->seq < 1)
        return nc_fail(err, NC_ERR_INVALID, "decision: empty batch (%d x %d)", io->batch, io->seq);
    NC_TRY(decision_reserve(m, io->batch, io->seq, err));
    NC_TRY(resolve_inputs(m, io, err));
    if (m->region) {
        NC_TRY(m->region(m->region_user, io, m->types, m->h, err));
    } else {
        size_t n = (size_t)io->batch * (size_t)io->seq, d = (size_t)c->hidden_size;
        int NL = modernbert_model_config(m->enc)->num_hidden_layers;
        /* per-layer outputs: the encoder's hidden states [NL + 1][n][D], the
         * embeddings first */
        float *hid = io->layers ? malloc((size_t)(NL + 1) * n * d * sizeof *hid) : NULL;
        if (io->layers && !hid) return nc_fail(err, NC_ERR_NOMEM, "decision: out of memory");
        modernbert_io eio = {.ids = io->ids, .mask = io->mask, .batch = io->batch,
                             .seq = io->seq, .last = m->h, .hidden = hid, .pooling = -1};
        nc_status st = modernbert_forward(m->enc, &eio, err);
        if (hid && st == NC_OK) memcpy(io->layers, hid + n * d, (size_t)NL * n * d * sizeof *hid);
        free(hid);
        NC_TRY(st);
        for (size_t r = 0; r < n; r++)
            add_rows(m->h + r * d, m->type_emb + (size_t)m->types[r] * d, d);
        for (int i = 0; i < c->head_layers; i++) {
            head_layer(m, &m->layers[i], m->h, io->mask, io->batch, io->seq);
            if (!io->layers) continue;
            float *dst = io->layers + (size_t)(NL + i) * n * d;
            for (size_t r = 0; r < n; r++) /* pad positions as zeros, as the encoder's */
                for (size_t k = 0; k < d; k++)
                    dst[r * d + k] = !io->mask || io->mask[r] ? m->h[r * d + k] : 0.0f;
        }
    }
    decision_io tail = *io;
    tail.markers = m->markers;
    return decision_tail(m, m->h, &tail, err);
}

/* softmax(z / t) of n logits into p (max-subtracted, as torch). */
static void softmax_t(float *p, const float *z, int n, float t) {
    for (int i = 0; i < n; i++)
        p[i] = z[i] / t;
    cpu_softmax(p, n);
}

nc_status decision_tail(const decision_model *m, const float *x, const decision_io *io,
                        nc_error *err) {
    const decision_config *c = &m->cfg;
    int K = c->num_markers, d = c->hidden_size, A = c->num_actions;
    float *sel = malloc((size_t)K * (size_t)d * sizeof *sel);
    float *hid = malloc((size_t)K * (size_t)(c->scorer_hidden > c->action_hidden ? c->scorer_hidden
                                                                                 : c->action_hidden) *
                        sizeof *hid);
    float *feat = malloc((size_t)c->feature_width * sizeof *feat);
    float z[DECISION_MAX_MARKERS], raw[DECISION_MAX_MARKERS];
    float *act = malloc((size_t)A * sizeof *act);
    nc_status st = sel && hid && feat && act ? NC_OK
                                             : nc_fail(err, NC_ERR_NOMEM, "decision: out of memory");
    for (int i = 0; st == NC_OK && i < io->batch * K; i++)
        if (io->markers[i] < 0 || io->markers[i] >= io->seq)
            st = nc_fail(err, NC_ERR_INVALID, "row %d: marker %d at position %d is outside [0, %d)",
                         i / K + 1, i % K + 1, io->markers[i], io->seq);
    for (int b = 0; st == NC_OK && b < io->batch; b++) {
        const float *row = x + (size_t)b * (size_t)io->seq * (size_t)d;
        for (int k = 0; k < K; k++)
            memcpy(sel + (size_t)k * (size_t)d,
                   row + (size_t)io->markers[(size_t)b * (size_t)K + (size_t)k] * (size_t)d,
                   (size_t)d * sizeof *sel);
        decision_linear_rows(m, &m->scorer1, sel, K, hid);
        m->kern->gelu(hid, hid, NULL, (size_t)K * (size_t)c->scorer_hidden);
        decision_linear_rows(m, &m->scorer2, hid, K, z);
        softmax_t(raw, z, K, 1.0f);
        size_t bk = (size_t)b * (size_t)K;
        if (io->marker_logits) memcpy(io->marker_logits + bk, z, (size_t)K * sizeof *z);
        if (io->marker_probs) memcpy(io->marker_probs + bk, raw, (size_t)K * sizeof *raw);
        if (io->calibrated) softmax_t(io->calibrated + bk, z, K, c->temperature);
        /* the action head reads the RAW probabilities, never the calibrated ones */
        int f = 0;
        for (int i = 0; i < c->n_features; i++) {
            int w = c->features[i] == DECISION_FEAT_RAW_PROBS ? K : d;
            memcpy(feat + f, c->features[i] == DECISION_FEAT_RAW_PROBS ? raw : row,
                   (size_t)w * sizeof *feat);
            f += w;
        }
        decision_linear_rows(m, &m->action1, feat, 1, hid);
        m->kern->gelu(hid, hid, NULL, (size_t)c->action_hidden);
        decision_linear_rows(m, &m->action2, hid, 1, act);
        cpu_softmax(act, A);
        if (io->action_probs) memcpy(io->action_probs + (size_t)b * (size_t)A, act, (size_t)A * sizeof *act);
    }
    free(sel);
    free(hid);
    free(feat);
    free(act);
    return st;
}
