/* Qwen3.5's Gated DeltaNet layer as MIL (qwen35_lower.h): the recurrent
 * step written with fp16 in mind -- the L2 norms take the max-abs out
 * before squaring (lower_rmsnorm with d = 1), softplus and the decay only
 * ever exponentiate non-positive numbers, the conv window moves by a 0/1
 * matmul (exact) -- then Qwen3's MLP kernel per bucket. */
#include "lower/qwen35_lower.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/qwen35_chunk.h"
#include "mil/check.h"

#define L2_EPS 1e-6 /* fla's l2norm, as HF calls it */

int lower_qwen35_dvp(const qwen35_config *c) {
    return (c->linear_value_head_dim + 31) / 32 * 32;
}

int64_t lower_qwen35_conv_channels(const qwen35_config *c) {
    return lower_qwen35_conv_channels_padded(c, 0);
}

int64_t lower_qwen35_conv_channels_padded(const qwen35_config *c, int dkp) {
    return 2 * (int64_t)c->linear_num_key_heads * (dkp ? dkp : c->linear_key_head_dim) +
           (int64_t)c->linear_num_value_heads * lower_qwen35_dvp(c);
}

int lower_qwen35_dkp(const qwen35_config *c, const lower_linear_weights *w) {
    return w->dkp ? w->dkp : c->linear_key_head_dim;
}

void lower_qwen35_linear_shapes(const qwen35_config *c, lower_linear_weights *w) {
    int64_t D = c->hidden_size, nv = c->linear_num_value_heads, dvp = lower_qwen35_dvp(c);
    int64_t C = lower_qwen35_conv_channels_padded(c, w->dkp);
    lower_weight_shape4(&w->attn_norm, 1, D, 1, 1);
    lower_weight_shape4(&w->qkv, C, D, 1, 1);
    lower_weight_shape4(&w->z, nv * dvp, D, 1, 1);
    lower_weight_shape4(&w->b, nv, D, 1, 1);
    lower_weight_shape4(&w->a, nv, D, 1, 1);
    lower_weight_shape4(&w->conv_prev, 1, C, 1, LOWER_STEP_SEQ);
    lower_weight_shape4(&w->conv_last, 1, C, 1, 1);
    lower_weight_shape4(&w->neg_a, 1, nv, 1, 1);
    lower_weight_shape4(&w->dt_bias, 1, nv, 1, 1);
    lower_weight_shape4(&w->gnorm, 1, 1, dvp, 1);
    lower_weight_shape4(&w->out, D, nv * dvp, 1, 1);
    lower_weight_shape4(&w->shift, 1, 1, LOWER_STEP_SEQ, LOWER_STEP_SEQ);
    lower_weight_shape4(&w->place, 1, 1, 1, LOWER_STEP_SEQ);
}

nc_status lower_qwen35_conv_constants(const qwen35_config *c, lower_linear_weights *w,
                                      nc_error *err) {
    int K = c->linear_conv_kernel_dim, W = LOWER_STEP_SEQ;
    if (K < 2 || K - 1 > W)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "linear_conv_kernel_dim %d: the step program keeps K-1 in [1, %d] inputs", K,
                       W);
    nc_fp16 *sh = calloc((size_t)W * W, sizeof *sh), *pl = calloc((size_t)W, sizeof *pl);
    if (!sh || !pl) {
        free(sh);
        free(pl);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    /* new column j = old column j + 1 for j < K-2; the new input lands in K-2 */
    for (int j = 0; j + 1 < K - 1; j++)
        sh[(size_t)(j + 1) * W + j] = nc_f32_to_fp16(1.0f);
    pl[K - 2] = nc_f32_to_fp16(1.0f);
    w->shift.data = sh;
    w->place.data = pl;
    return NC_OK;
}

static mil_var *input4(mil_builder *b, const char *name, int64_t d0, int64_t d1, int64_t d2,
                       int64_t d3) {
    int64_t dims[4] = {d0, d1, d2, d3};
    const mil_type *t = mil_type_tensor(mil_builder_program(b), MIL_DT_FP16, 4, dims);
    return t ? mil_build_input(b, name, t) : NULL;
}

static mil_var *reshape4(mil_builder *b, const char *name, mil_var *x, int32_t d0, int32_t d1,
                         int32_t d2, int32_t d3) {
    int32_t s[4] = {d0, d1, d2, d3};
    return x ? mil_build_reshape(b, name, x, 4, s) : NULL;
}

static mil_var *conv(mil_builder *b, const char *name, mil_var *x, lower_weight *w) {
    char wn[160];
    snprintf(wn, sizeof wn, "%s_weight", name);
    mil_var *wv = x ? lower_shared_weight(b, wn, w) : NULL;
    return wv ? mil_build_conv(b, name, x, wv, NULL, 1) : NULL;
}

/* Channels [c0, c0 + n) of x [1, C, 1, T]. */
static mil_var *channels(mil_builder *b, const char *name, mil_var *x, int32_t c0, int32_t n,
                         int32_t T) {
    int32_t begin[4] = {0, c0, 0, 0}, size[4] = {1, n, 1, T};
    return x ? mil_build_slice_by_size(b, name, x, 4, begin, size) : NULL;
}

static mil_var *fp16(mil_builder *b, const char *name, double v) {
    return mil_build_const_scalar(b, name, MIL_DT_FP16, v);
}

static mil_var *reduce_sum(mil_builder *b, const char *name, mil_var *x, int axis) {
    int32_t ax[1] = {axis};
    return x ? mil_build_reduce(b, "reduce_sum", name, x, 1, ax, 1) : NULL;
}

/* softplus(t) = max(t, 0) + log(1 + exp(-|t|)): exp of a non-positive
 * number only, so nothing overflows fp16 (the textbook log(1 + exp(t))
 * does from t > 11); for t > 20 (torch's threshold) the log term is below
 * fp16's resolution of t anyway. */
static mil_var *softplus_safe(mil_builder *b, mil_var *t, lower_exp_form f) {
    mil_var *pos = t ? mil_build_unary(b, "relu", "sp_pos", t) : NULL;
    mil_var *ab = pos ? mil_build_unary(b, "abs", "sp_abs", t) : NULL;
    mil_var *ng = ab ? mil_build_mul(b, "sp_neg", ab, fp16(b, "sp_minus_one", -1.0)) : NULL;
    mil_var *ex = lower_exp_nonpos(b, "sp_exp", ng, f); /* in (0, 1] */
    mil_var *on = ex ? mil_build_add(b, "sp_one_plus", ex, fp16(b, "sp_one", 1.0)) : NULL;
    mil_var *lg = on ? mil_build_unary(b, "log", "sp_log", on) : NULL;
    return lg ? mil_build_add(b, "softplus", pos, lg) : NULL;
}

/* What the step and the prefill share, over T token columns (1 or S). */
typedef struct lin_dims {
    int32_t D, nk, nv, dk, dv, dvp, G, C, T, dk_real;
} lin_dims;

/* dk is the padded key head width (w->dkp); dk_real scales q. */
static lin_dims dims_of(const qwen35_config *c, const lower_linear_weights *w, int32_t T) {
    lin_dims d = {c->hidden_size,
                  c->linear_num_key_heads,
                  c->linear_num_value_heads,
                  lower_qwen35_dkp(c, w),
                  c->linear_value_head_dim,
                  lower_qwen35_dvp(c),
                  0,
                  (int32_t)lower_qwen35_conv_channels_padded(c, w->dkp),
                  T,
                  c->linear_key_head_dim};
    d.G = d.nv / d.nk;
    return d;
}

/* RMSNorm and the four input projections of x [1, D, 1, T]. */
static int front(mil_builder *b, const qwen35_config *c, lower_linear_weights *w, mil_var *x,
                 mil_var **u, mil_var **z, mil_var **bb, mil_var **aa) {
    mil_var *nw = x ? lower_shared_weight(b, "attn_norm_weight", &w->attn_norm) : NULL;
    mil_var *h =
        nw ? lower_rmsnorm(b, "attn_norm", x, 1, c->hidden_size, c->rms_norm_eps, nw) : NULL;
    *u = conv(b, "in_proj_qkv", h, &w->qkv); /* [1, C, 1, T] */
    *z = *u ? conv(b, "in_proj_z", h, &w->z) : NULL;
    *bb = *z ? conv(b, "in_proj_b", h, &w->b) : NULL;
    *aa = *bb ? conv(b, "in_proj_a", h, &w->a) : NULL;
    return *aa != NULL;
}

/* q, k [1, nk, dk, T] L2-normed per key head and token (max-abs scaled,
 * fp16-safe), q * dk^-0.5; v [1, nv dvp, 1, T] as it is. */
static int heads(mil_builder *b, const lin_dims *d, mil_var *ca, mil_var **qn, mil_var **kn,
                 mil_var **v) {
    mil_var *q = ca ? channels(b, "q_lin", ca, 0, d->nk * d->dk, d->T) : NULL;
    mil_var *k = q ? channels(b, "k_lin", ca, d->nk * d->dk, d->nk * d->dk, d->T) : NULL;
    *v = k ? channels(b, "v_lin", ca, 2 * d->nk * d->dk, d->nv * d->dvp, d->T) : NULL;
    mil_var *q4 = *v ? reshape4(b, "q_heads", q, 1, d->nk, d->dk, d->T) : NULL;
    mil_var *k4 = q4 ? reshape4(b, "k_heads", k, 1, d->nk, d->dk, d->T) : NULL;
    mil_var *qs = k4 ? fp16(b, "q_scale", 1.0 / sqrt((double)d->dk_real)) : NULL;
    *qn = qs ? lower_rmsnorm(b, "q_l2", q4, 2, 1, L2_EPS, qs) : NULL;
    *kn = *qn ? lower_rmsnorm(b, "k_l2", k4, 2, 1, L2_EPS, NULL) : NULL;
    return *kn != NULL;
}

/* beta = sigmoid(b) and decay = exp(-exp(A_log) softplus(a + dt_bias))
 * (exp of <= 0), [1, nv, 1, T]; a valid mask [1, 1, 1, T] (or NULL) zeroes
 * beta and the log-decay of padding columns, which then leave the state as
 * it was. */
static int gates(mil_builder *b, lower_linear_weights *w, mil_var *bb, mil_var *aa, mil_var *valid,
                 mil_var **beta, mil_var **logd, mil_var **decay) {
    mil_var *be = bb ? mil_build_unary(b, "sigmoid", "beta_flat", bb) : NULL;
    mil_var *dtb = be ? lower_shared_weight(b, "dt_bias", &w->dt_bias) : NULL;
    mil_var *na = dtb ? lower_shared_weight(b, "neg_exp_a_log", &w->neg_a) : NULL;
    mil_var *ad = na ? mil_build_add(b, "a_biased", aa, dtb) : NULL;
    mil_var *sp = softplus_safe(b, ad, w->exp);
    mil_var *g = sp ? mil_build_mul(b, "g", sp, na) : NULL;
    if (g && valid) {
        be = mil_build_mul(b, "beta_valid", be, valid);
        g = be ? mil_build_mul(b, "g_valid", g, valid) : NULL;
    }
    *beta = be;
    *logd = g;
    *decay = lower_exp_nonpos(b, "decay_flat", g, w->exp); /* g <= 0 */
    return *decay != NULL;
}

/* One token of the delta rule on S [nk, G, dk, dvp] (a key head serves its
 * G value heads by broadcasting): q, k [nk, 1, dk, 1], v [nk, G, 1, dvp],
 * beta, decay [nk, G, 1, 1]; the new state into *S, S^T q into *o. */
static int delta_token(mil_builder *b, const char *t, mil_var **S, mil_var *q, mil_var *k,
                       mil_var *v, mil_var *beta, mil_var *decay, mil_var **o) {
    char n[9][48];
    const char *what[9] = {"state_decayed", "kv_terms",  "kv_mem",    "delta_raw", "delta",
                           "state_update",  "state_new", "out_terms", "core_out"};
    for (int i = 0; i < 9; i++)
        snprintf(n[i], sizeof n[i], "%s%s", what[i], t);
    mil_var *Sd = *S && q && k && v && beta && decay ? mil_build_mul(b, n[0], *S, decay) : NULL;
    mil_var *km = Sd ? mil_build_mul(b, n[1], Sd, k) : NULL;
    mil_var *kv = reduce_sum(b, n[2], km, 2); /* S^T k: [nk, G, 1, dvp] */
    mil_var *df = kv ? mil_build_binary(b, "sub", n[3], v, kv) : NULL;
    mil_var *dl = df ? mil_build_mul(b, n[4], df, beta) : NULL;
    mil_var *up = dl ? mil_build_mul(b, n[5], k, dl) : NULL;
    *S = up ? mil_build_add(b, n[6], Sd, up) : NULL;
    mil_var *om = *S ? mil_build_mul(b, n[7], *S, q) : NULL;
    *o = reduce_sum(b, n[8], om, 2); /* S^T q: [nk, G, 1, dvp] */
    return *o != NULL;
}

/* Gated RMSNorm per value head (plain w; padded channels are zero and the
 * mean divides by dv) of o [1, nv, dvp, T], times silu(z); out_proj; x + it. */
static mil_var *back(mil_builder *b, const qwen35_config *c, const lin_dims *d,
                     lower_linear_weights *w, mil_var *o4, mil_var *z, mil_var *x) {
    mil_var *gw = o4 ? lower_shared_weight(b, "gnorm_weight", &w->gnorm) : NULL;
    mil_var *on = gw ? lower_rmsnorm(b, "gnorm", o4, 2, d->dv, c->rms_norm_eps, gw) : NULL;
    mil_var *z4 = on ? reshape4(b, "z_heads", z, 1, d->nv, d->dvp, d->T) : NULL;
    mil_var *zs = z4 ? mil_build_unary(b, "silu", "z_act", z4) : NULL;
    mil_var *gt = zs ? mil_build_mul(b, "core_gated", on, zs) : NULL;
    mil_var *gf = reshape4(b, "core_flat", gt, 1, d->nv * d->dvp, 1, d->T);
    mil_var *op = conv(b, "out_proj", gf, &w->out);
    return op ? mil_build_add(b, "x_out", x, op) : NULL;
}

void lower_qwen35_step_function(mil_builder *b, const qwen35_config *c, lower_linear_weights *w) {
    lin_dims d = dims_of(c, w, 1);
    int32_t W = LOWER_STEP_SEQ;
    mil_var *x = input4(b, "x", 1, d.D, 1, W);
    mil_var *cs = input4(b, "conv_state", 1, d.C, 1, W);
    mil_var *st = input4(b, "delta_state", 1, d.nv, d.dk, d.dvp);
    if (!x || !cs || !st) return;
    /* the token: column 0 */
    int32_t b0[4] = {0, 0, 0, 0}, s0[4] = {1, d.D, 1, 1};
    mil_var *x0 = mil_build_slice_by_size(b, "x_token", x, 4, b0, s0);
    mil_var *u, *z, *bb, *aa;
    if (!front(b, c, w, x0, &u, &z, &bb, &aa)) return;

    /* causal depthwise conv over [state columns 0..K-2, u], then SiLU */
    mil_var *wp = lower_shared_weight(b, "conv_prev_weight", &w->conv_prev);
    mil_var *wl = wp ? lower_shared_weight(b, "conv_last_weight", &w->conv_last) : NULL;
    mil_var *pm = wl ? mil_build_mul(b, "conv_prev_terms", cs, wp) : NULL;
    mil_var *ps = reduce_sum(b, "conv_prev_sum", pm, 3);
    mil_var *lt = ps ? mil_build_mul(b, "conv_last_term", u, wl) : NULL;
    mil_var *cv = lt ? mil_build_add(b, "conv_out", ps, lt) : NULL;
    mil_var *ca = cv ? mil_build_unary(b, "silu", "conv_act", cv) : NULL;
    /* the new window: shift left by one (0/1 matmul, exact), u into column K-2 */
    mil_var *sh = ca ? lower_shared_weight(b, "conv_shift", &w->shift) : NULL;
    mil_var *pl = sh ? lower_shared_weight(b, "conv_place", &w->place) : NULL;
    mil_var *cm = pl ? mil_build_matmul(b, "conv_shifted", cs, sh, 0, 0) : NULL;
    mil_var *cu = cm ? mil_build_mul(b, "conv_placed", u, pl) : NULL;
    mil_var *cs_out = cu ? mil_build_add(b, "conv_state_out", cm, cu) : NULL;

    mil_var *qn, *kn, *v, *beta, *g, *decay, *o;
    if (!cs_out || !heads(b, &d, ca, &qn, &kn, &v) || !gates(b, w, bb, aa, NULL, &beta, &g, &decay))
        return;
    mil_var *S = reshape4(b, "state_heads", st, d.nk, d.G, d.dk, d.dvp);
    if (!delta_token(b, "", &S, reshape4(b, "q_tok", qn, d.nk, 1, d.dk, 1),
                     reshape4(b, "k_tok", kn, d.nk, 1, d.dk, 1),
                     reshape4(b, "v_tok", v, d.nk, d.G, 1, d.dvp),
                     reshape4(b, "beta", beta, d.nk, d.G, 1, 1),
                     reshape4(b, "decay", decay, d.nk, d.G, 1, 1), &o))
        return;
    mil_var *st_out = reshape4(b, "delta_state_out", S, 1, d.nv, d.dk, d.dvp);
    mil_var *xo = back(b, c, &d, w, reshape4(b, "core_heads", o, 1, d.nv, d.dvp, 1), z, x);
    if (!xo || !st_out) return; /* x_out: every column */
    mil_var *outs[3] = {xo, cs_out, st_out};
    mil_build_done(b, outs, 3);
}

/* A 0/1 fp16 constant [1, 1, rows, cols] with ones where m[r * cols + c]. */
static mil_var *mask_const(mil_builder *b, const char *name, int32_t rows, int32_t cols,
                           const unsigned char *m) {
    nc_fp16 *v = calloc((size_t)rows * cols, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        v[i] = nc_f32_to_fp16(m[i] ? 1.0f : 0.0f);
    int64_t dims[4] = {1, 1, rows, cols};
    mil_var *r = mil_build_const_tensor(b, name, MIL_DT_FP16, 4, dims, v);
    free(v);
    return r;
}

/* The causal conv over a chunk: out[t] = sum_j w_j x[t - (K-1) + j], where
 * positions before the chunk come from the state's columns. Each tap is a
 * constant 0/1 shift of u (and of the state) by matmul, exact. */
static mil_var *chunk_conv(mil_builder *b, const qwen35_config *c, const lin_dims *d,
                           lower_linear_weights *w, mil_var *u, mil_var *cs) {
    int K = c->linear_conv_kernel_dim, S = d->T, W = LOWER_STEP_SEQ;
    mil_var *wl = lower_shared_weight(b, "conv_last_weight", &w->conv_last);
    mil_var *wp = wl ? lower_shared_weight(b, "conv_prev_weight", &w->conv_prev) : NULL;
    mil_var *acc = wp ? mil_build_mul(b, "conv_tap0", u, wl) : NULL;
    unsigned char *mu = calloc((size_t)S * S, 1), *ms = calloc((size_t)W * S, 1);
    if (!mu || !ms) acc = NULL;
    for (int s = 1; acc && s < K; s++) { /* tap K-1-s: the input s positions back */
        char n[7][32];
        const char *what[7] = {"conv_shift", "conv_from_state", "conv_in_new", "conv_in_state",
                               "conv_in",    "conv_w",          "conv_tap"};
        for (int i = 0; i < 7; i++)
            snprintf(n[i], sizeof n[i], "%s%d", what[i], s);
        memset(mu, 0, (size_t)S * S);
        memset(ms, 0, (size_t)W * S);
        for (int t = 0; t < S; t++) {
            if (t - s >= 0)
                mu[(size_t)(t - s) * S + t] = 1;
            else
                ms[(size_t)(K - 1 + t - s) * S + t] = 1; /* the state column of that position */
        }
        mil_var *shu = mask_const(b, n[0], S, S, mu), *shs = mask_const(b, n[1], W, S, ms);
        mil_var *xu = shu && shs ? mil_build_matmul(b, n[2], u, shu, 0, 0) : NULL;
        mil_var *xs = xu ? mil_build_matmul(b, n[3], cs, shs, 0, 0) : NULL;
        mil_var *xi = xs ? mil_build_add(b, n[4], xu, xs) : NULL;
        int32_t bg[4] = {0, 0, 0, K - 1 - s}, sz[4] = {1, d->C, 1, 1};
        mil_var *wj = xi ? mil_build_slice_by_size(b, n[5], wp, 4, bg, sz) : NULL;
        mil_var *tp = wj ? mil_build_mul(b, n[6], xi, wj) : NULL;
        char an[32];
        snprintf(an, sizeof an, "conv_sum%d", s);
        acc = tp ? mil_build_add(b, s == K - 1 ? "conv_out" : an, acc, tp) : NULL;
    }
    free(mu);
    free(ms);
    return acc;
}

int lower_qwen35_prefill_front(mil_builder *b, const qwen35_config *c, lower_linear_weights *w,
                               int S, lower_q35_prefill *io) {
    lin_dims d = dims_of(c, w, S);
    int32_t W = LOWER_STEP_SEQ;
    memset(io, 0, sizeof *io);
    io->x = input4(b, "x", 1, d.D, 1, S);
    mil_var *valid = input4(b, "valid", 1, 1, 1, S);
    mil_var *cs = input4(b, "conv_state", 1, d.C, 1, W);
    io->state = input4(b, "delta_state", 1, d.nv, d.dk, d.dvp);
    mil_var *pks = input4(b, "conv_pick_state", 1, 1, W, W);
    mil_var *pkn = input4(b, "conv_pick_new", 1, 1, S, W);
    mil_var *u, *bb, *aa;
    if (!io->x || !valid || !cs || !io->state || !pks || !pkn ||
        !front(b, c, w, io->x, &u, &io->z, &bb, &aa))
        return 0;
    mil_var *cv = chunk_conv(b, c, &d, w, u, cs);
    mil_var *ca = cv ? mil_build_unary(b, "silu", "conv_act", cv) : NULL;
    /* the new window: the last K-1 inputs before the chunk's end, which the
     * host's 0/1 pick matrices select (they depend on the token count) */
    mil_var *ws = ca ? mil_build_matmul(b, "conv_keep_state", cs, pks, 0, 0) : NULL;
    mil_var *wn = ws ? mil_build_matmul(b, "conv_keep_new", u, pkn, 0, 0) : NULL;
    io->conv_state_out = wn ? mil_build_add(b, "conv_state_out", ws, wn) : NULL;
    return io->conv_state_out && heads(b, &d, ca, &io->q, &io->k, &io->v) &&
           gates(b, w, bb, aa, valid, &io->beta, &io->g, &io->decay);
}

void lower_qwen35_prefill_finish(mil_builder *b, const qwen35_config *c, lower_linear_weights *w,
                                 const lower_q35_prefill *io, int S, mil_var *o, mil_var *state) {
    lin_dims d = dims_of(c, w, S);
    mil_var *st_out = state ? reshape4(b, "delta_state_out", state, 1, d.nv, d.dk, d.dvp) : NULL;
    mil_var *xo = st_out && o ? back(b, c, &d, w, o, io->z, io->x) : NULL;
    if (!xo) return;
    mil_var *outs[3] = {xo, io->conv_state_out, st_out};
    mil_build_done(b, outs, 3);
}

void lower_qwen35_prefill_function(mil_builder *b, const qwen35_config *c, lower_linear_weights *w,
                                   int S) {
    lin_dims d = dims_of(c, w, S);
    lower_q35_prefill io;
    if (!lower_qwen35_prefill_front(b, c, w, S, &io)) return;
    mil_var *qn = io.q, *kn = io.k, *beta = io.beta, *decay = io.decay, *o = NULL;
    mil_var *v4 = reshape4(b, "v_heads", io.v, d.nk, d.G, d.dvp, S);
    mil_var *S_ = reshape4(b, "state_heads", io.state, d.nk, d.G, d.dk, d.dvp);
    /* the tokens in order: the state is the only sequential part */
    nc_fp16 *eye = calloc((size_t)S * S, sizeof *eye);
    for (int t = 0; eye && t < S; t++)
        eye[(size_t)t * S + t] = nc_f32_to_fp16(1.0f);
    int64_t ed[4] = {S, 1, 1, S};
    mil_var *onehot =
        eye ? mil_build_const_tensor(b, "token_onehot", MIL_DT_FP16, 4, ed, eye) : NULL;
    free(eye);
    mil_var *acc = NULL;
    for (int t = 0; t < S && onehot && v4 && S_; t++) {
        char n[8][32], tag[16];
        const char *what[8] = {"q_t", "k_t", "v_t", "beta_t", "decay_t", "sel_t", "o_t", "o_acc"};
        snprintf(tag, sizeof tag, "_%d", t);
        for (int i = 0; i < 8; i++)
            snprintf(n[i], sizeof n[i], "%s%d", what[i], t);
        int32_t bq[4] = {0, 0, 0, t}, sq[4] = {1, d.nk, d.dk, 1};
        int32_t bv[4] = {0, 0, 0, t}, sv[4] = {d.nk, d.G, d.dvp, 1};
        int32_t bg[4] = {0, 0, 0, t}, sg[4] = {1, d.nv, 1, 1};
        int32_t bo[4] = {t, 0, 0, 0}, so[4] = {1, 1, 1, S};
        char r[5][32];
        for (int i = 0; i < 5; i++)
            snprintf(r[i], sizeof r[i], "%s_r", n[i]);
        mil_var *qt =
            reshape4(b, r[0], mil_build_slice_by_size(b, n[0], qn, 4, bq, sq), d.nk, 1, d.dk, 1);
        mil_var *kt =
            reshape4(b, r[1], mil_build_slice_by_size(b, n[1], kn, 4, bq, sq), d.nk, 1, d.dk, 1);
        mil_var *vt =
            reshape4(b, r[2], mil_build_slice_by_size(b, n[2], v4, 4, bv, sv), d.nk, d.G, 1, d.dvp);
        mil_var *bt =
            reshape4(b, r[3], mil_build_slice_by_size(b, n[3], beta, 4, bg, sg), d.nk, d.G, 1, 1);
        mil_var *dt =
            reshape4(b, r[4], mil_build_slice_by_size(b, n[4], decay, 4, bg, sg), d.nk, d.G, 1, 1);
        if (!delta_token(b, tag, &S_, qt, kt, vt, bt, dt, &o)) return;
        /* o [nk, G, 1, dvp] -> column t of [1, nv, dvp, S] */
        mil_var *ot = reshape4(b, n[6], o, 1, d.nv, d.dvp, 1);
        mil_var *sel = ot ? mil_build_slice_by_size(b, n[5], onehot, 4, bo, so) : NULL;
        char pn[32];
        snprintf(pn, sizeof pn, "o_place%d", t);
        mil_var *pl = sel ? mil_build_mul(b, pn, ot, sel) : NULL;
        acc = !pl ? NULL : acc ? mil_build_add(b, n[7], acc, pl) : pl;
        if (!acc) return;
    }
    lower_qwen35_prefill_finish(b, c, w, &io, S, acc, S_);
}

nc_status lower_qwen35_linear_program(const lower_plan *p, const qwen35_config *c,
                                      lower_linear_weights *w, lower_layer_weights *mlp,
                                      lower_q35_prefill_form form, const char *dir,
                                      mil_program **out, nc_error *err) {
    if (c->linear_num_value_heads % c->linear_num_key_heads)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "linear_num_value_heads %d is not a multiple of linear_num_key_heads %d",
                       c->linear_num_value_heads, c->linear_num_key_heads);
    for (int s = 0; form == LOWER_Q35_PREFILL_CHUNKED && s < p->n_seqs; s++)
        if (p->seqs[s] % LOWER_Q35_SUBCHUNK)
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "bucket %d: the chunked prefill needs a multiple of %d tokens",
                           p->seqs[s], LOWER_Q35_SUBCHUNK);
    mil_builder *b;
    NC_TRY(mil_builder_new(&b, dir, err));
    char fn[64];
    snprintf(fn, sizeof fn, "step_s%d", LOWER_STEP_SEQ);
    if (mil_build_function(b, fn, "ios18") == NC_OK) lower_qwen35_step_function(b, c, w);
    for (int s = 0; s < p->n_seqs; s++) {
        snprintf(fn, sizeof fn, "prefill_s%d", p->seqs[s]);
        if (mil_build_function(b, fn, "ios18") != NC_OK) break;
        if (form == LOWER_Q35_PREFILL_UNROLLED)
            lower_qwen35_prefill_function(b, c, w, p->seqs[s]);
        else
            lower_qwen35_prefill_chunked_function(b, c, w, p->seqs[s], LOWER_Q35_SUBCHUNK,
                                                  LOWER_Q35_CHUNK_SAFE);
        snprintf(fn, sizeof fn, "mlp_s%d", p->seqs[s]);
        if (mil_build_function(b, fn, "ios18") != NC_OK) break;
        lower_qwen3_mlp_function(b, p, p->seqs[s], mlp);
    }
    return lower_program_finish(b, out, err);
}
