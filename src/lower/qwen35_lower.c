/* Qwen3.5's Gated DeltaNet layer as MIL (qwen35_lower.h): the recurrent
 * step written with fp16 in mind -- the L2 norms take the max-abs out
 * before squaring (lower_rmsnorm with d = 1), softplus and the decay only
 * ever exponentiate non-positive numbers, the conv window moves by a 0/1
 * matmul (exact) -- then Qwen3's MLP kernel per bucket. */
#include "lower/qwen35_lower.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mil/check.h"

#define L2_EPS 1e-6 /* fla's l2norm, as HF calls it */

int lower_qwen35_dvp(const qwen35_config *c) {
    return (c->linear_value_head_dim + 31) / 32 * 32;
}

int64_t lower_qwen35_conv_channels(const qwen35_config *c) {
    return 2 * (int64_t)c->linear_num_key_heads * c->linear_key_head_dim +
           (int64_t)c->linear_num_value_heads * lower_qwen35_dvp(c);
}

void lower_qwen35_linear_shapes(const qwen35_config *c, lower_linear_weights *w) {
    int64_t D = c->hidden_size, nv = c->linear_num_value_heads, dvp = lower_qwen35_dvp(c);
    int64_t C = lower_qwen35_conv_channels(c);
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

/* Channels [c0, c0 + n) of x [1, C, 1, 1]. */
static mil_var *channels(mil_builder *b, const char *name, mil_var *x, int32_t c0, int32_t n) {
    int32_t begin[4] = {0, c0, 0, 0}, size[4] = {1, n, 1, 1};
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
static mil_var *softplus_safe(mil_builder *b, mil_var *t) {
    mil_var *pos = t ? mil_build_unary(b, "relu", "sp_pos", t) : NULL;
    mil_var *ab = pos ? mil_build_unary(b, "abs", "sp_abs", t) : NULL;
    mil_var *ng = ab ? mil_build_mul(b, "sp_neg", ab, fp16(b, "sp_minus_one", -1.0)) : NULL;
    mil_var *ex = ng ? mil_build_unary(b, "exp", "sp_exp", ng) : NULL; /* in (0, 1] */
    mil_var *on = ex ? mil_build_add(b, "sp_one_plus", ex, fp16(b, "sp_one", 1.0)) : NULL;
    mil_var *lg = on ? mil_build_unary(b, "log", "sp_log", on) : NULL;
    return lg ? mil_build_add(b, "softplus", pos, lg) : NULL;
}

void lower_qwen35_step_function(mil_builder *b, const qwen35_config *c, lower_linear_weights *w) {
    int32_t D = c->hidden_size, nk = c->linear_num_key_heads, nv = c->linear_num_value_heads;
    int32_t dk = c->linear_key_head_dim, dv = c->linear_value_head_dim, G = nv / nk;
    int32_t dvp = lower_qwen35_dvp(c), C = (int32_t)lower_qwen35_conv_channels(c);
    int32_t W = LOWER_STEP_SEQ;
    mil_var *x = input4(b, "x", 1, D, 1, W);
    mil_var *cs = input4(b, "conv_state", 1, C, 1, W);
    mil_var *st = input4(b, "delta_state", 1, nv, dk, dvp);
    if (!x || !cs || !st) return;
    /* the token: column 0 */
    int32_t b0[4] = {0, 0, 0, 0}, s0[4] = {1, D, 1, 1};
    mil_var *x0 = mil_build_slice_by_size(b, "x_token", x, 4, b0, s0);
    mil_var *nw = x0 ? lower_shared_weight(b, "attn_norm_weight", &w->attn_norm) : NULL;
    mil_var *h = nw ? lower_rmsnorm(b, "attn_norm", x0, 1, D, c->rms_norm_eps, nw) : NULL;
    mil_var *u = conv(b, "in_proj_qkv", h, &w->qkv); /* [1, C, 1, 1] */
    mil_var *z = u ? conv(b, "in_proj_z", h, &w->z) : NULL;
    mil_var *bb = z ? conv(b, "in_proj_b", h, &w->b) : NULL;
    mil_var *aa = bb ? conv(b, "in_proj_a", h, &w->a) : NULL;

    /* causal depthwise conv over [state columns 0..K-2, u], then SiLU */
    mil_var *wp = aa ? lower_shared_weight(b, "conv_prev_weight", &w->conv_prev) : NULL;
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

    /* q, k: L2 norm per key head (max-abs scaled, fp16-safe), q * dk^-0.5 */
    mil_var *q = cs_out ? channels(b, "q_lin", ca, 0, nk * dk) : NULL;
    mil_var *k = q ? channels(b, "k_lin", ca, nk * dk, nk * dk) : NULL;
    mil_var *v = k ? channels(b, "v_lin", ca, 2 * nk * dk, nv * dvp) : NULL;
    mil_var *q4 = v ? reshape4(b, "q_heads", q, nk, 1, dk, 1) : NULL;
    mil_var *k4 = q4 ? reshape4(b, "k_heads", k, nk, 1, dk, 1) : NULL;
    mil_var *qs = k4 ? fp16(b, "q_scale", 1.0 / sqrt((double)dk)) : NULL;
    mil_var *qn = qs ? lower_rmsnorm(b, "q_l2", q4, 2, 1, L2_EPS, qs) : NULL;
    mil_var *kn = qn ? lower_rmsnorm(b, "k_l2", k4, 2, 1, L2_EPS, NULL) : NULL;
    mil_var *v4 = kn ? reshape4(b, "v_heads", v, nk, G, 1, dvp) : NULL;

    /* beta = sigmoid(b); decay = exp(-exp(A_log) softplus(a + dt_bias)), exp of <= 0 */
    mil_var *be = v4 ? mil_build_unary(b, "sigmoid", "beta_flat", bb) : NULL;
    mil_var *beta = reshape4(b, "beta", be, nk, G, 1, 1);
    mil_var *dtb = beta ? lower_shared_weight(b, "dt_bias", &w->dt_bias) : NULL;
    mil_var *na = dtb ? lower_shared_weight(b, "neg_exp_a_log", &w->neg_a) : NULL;
    mil_var *ad = na ? mil_build_add(b, "a_biased", aa, dtb) : NULL;
    mil_var *sp = softplus_safe(b, ad);
    mil_var *g = sp ? mil_build_mul(b, "g", sp, na) : NULL;
    mil_var *de = g ? mil_build_unary(b, "exp", "decay_flat", g) : NULL;
    mil_var *decay = reshape4(b, "decay", de, nk, G, 1, 1);

    /* the delta rule on S [nk, G, dk, dvp]: k head h serves value heads h G .. h G + G-1 */
    mil_var *S = decay ? reshape4(b, "state_heads", st, nk, G, dk, dvp) : NULL;
    mil_var *Sd = S ? mil_build_mul(b, "state_decayed", S, decay) : NULL;
    mil_var *km = Sd ? mil_build_mul(b, "kv_terms", Sd, kn) : NULL;
    mil_var *kv = reduce_sum(b, "kv_mem", km, 2); /* S^T k: [nk, G, 1, dvp] */
    mil_var *df = kv ? mil_build_binary(b, "sub", "delta_raw", v4, kv) : NULL;
    mil_var *dl = df ? mil_build_mul(b, "delta", df, beta) : NULL;
    mil_var *up = dl ? mil_build_mul(b, "state_update", kn, dl) : NULL;
    mil_var *S2 = up ? mil_build_add(b, "state_new", Sd, up) : NULL;
    mil_var *st_out = reshape4(b, "delta_state_out", S2, 1, nv, dk, dvp);
    mil_var *om = st_out ? mil_build_mul(b, "out_terms", S2, qn) : NULL;
    mil_var *o = reduce_sum(b, "core_out", om, 2); /* S^T q: [nk, G, 1, dvp] */

    /* gated RMSNorm per value head (plain w; padded channels are zero and
     * the mean divides by dv), times silu(z); out_proj; residual */
    mil_var *o4 = reshape4(b, "core_heads", o, 1, nv, dvp, 1);
    mil_var *gw = o4 ? lower_shared_weight(b, "gnorm_weight", &w->gnorm) : NULL;
    mil_var *on = gw ? lower_rmsnorm(b, "gnorm", o4, 2, dv, c->rms_norm_eps, gw) : NULL;
    mil_var *z4 = on ? reshape4(b, "z_heads", z, 1, nv, dvp, 1) : NULL;
    mil_var *zs = z4 ? mil_build_unary(b, "silu", "z_act", z4) : NULL;
    mil_var *gt = zs ? mil_build_mul(b, "core_gated", on, zs) : NULL;
    mil_var *gf = reshape4(b, "core_flat", gt, 1, nv * dvp, 1, 1);
    mil_var *op = conv(b, "out_proj", gf, &w->out);
    mil_var *xo = op ? mil_build_add(b, "x_out", x, op) : NULL; /* every column */
    if (!xo) return;
    mil_var *outs[3] = {xo, cs_out, st_out};
    mil_build_done(b, outs, 3);
}

nc_status lower_qwen35_linear_program(const lower_plan *p, const qwen35_config *c,
                                      lower_linear_weights *w, lower_layer_weights *mlp,
                                      const char *dir, mil_program **out, nc_error *err) {
    if (c->linear_num_value_heads % c->linear_num_key_heads)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "linear_num_value_heads %d is not a multiple of linear_num_key_heads %d",
                       c->linear_num_value_heads, c->linear_num_key_heads);
    mil_builder *b;
    NC_TRY(mil_builder_new(&b, dir, err));
    char fn[64];
    snprintf(fn, sizeof fn, "step_s%d", LOWER_STEP_SEQ);
    if (mil_build_function(b, fn, "ios18") == NC_OK) lower_qwen35_step_function(b, c, w);
    for (int s = 0; s < p->n_seqs; s++) {
        snprintf(fn, sizeof fn, "mlp_s%d", p->seqs[s]);
        if (mil_build_function(b, fn, "ios18") != NC_OK) break;
        lower_qwen3_mlp_function(b, p, p->seqs[s], mlp);
    }
    return lower_program_finish(b, out, err);
}
