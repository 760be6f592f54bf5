/* Building blocks of the Qwen3 lowering (see lower_ops.h): the fp16-safe
 * RMSNorm, RoPE by a constant rotate-half matmul, shared weights. */
#include "lower/lower_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lower/palettize.h"

void lower_weight_forget(lower_weight *w) {
    w->val = NULL;
    w->lut_val = NULL;
}

mil_var *lower_shared_weight(mil_builder *b, const char *name, lower_weight *w) {
    if (w->pal) return lower_palette_weight(b, name, w);
    if (w->val) return mil_build_const(b, name, w->val);
    mil_var *v = mil_build_const_tensor(b, name, MIL_DT_FP16, w->rank, w->dims, w->data);
    if (v) w->val = v->cval;
    return v;
}

static mil_var *scalar(mil_builder *b, const char *prefix, const char *what, double v) {
    char n[160];
    snprintf(n, sizeof n, "%s_%s", prefix, what);
    return mil_build_const_scalar(b, n, MIL_DT_FP16, v);
}

mil_var *lower_rmsnorm(mil_builder *b, const char *prefix, mil_var *x, int axis, int64_t d,
                       double eps, mil_var *w) {
    char n[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", prefix, s), n)
    int32_t ax[1] = {axis};
    mil_var *ab = mil_build_unary(b, "abs", NM("abs"), x);
    mil_var *mx = ab ? mil_build_reduce(b, "reduce_max", NM("absmax"), ab, 1, ax, 1) : NULL;
    /* the floor keeps all-zero (padding) columns finite; any m > 0 is exact */
    mil_var *m =
        mx ? mil_build_binary(b, "maximum", NM("m"), mx, scalar(b, prefix, "floor", 1.0 / 128))
           : NULL;
    mil_var *xs = m ? mil_build_binary(b, "real_div", NM("xs"), x, m) : NULL;
    mil_var *sq = xs ? mil_build_mul(b, NM("sq"), xs, xs) : NULL;
    mil_var *ss = sq ? mil_build_reduce(b, "reduce_sum", NM("sumsq"), sq, 1, ax, 1) : NULL;
    /* reduce_sum then 1/d: reduce_mean fails on some chips (docs/ane-rules.md) */
    mil_var *ms =
        ss ? mil_build_mul(b, NM("meansq"), ss, scalar(b, prefix, "inv_d", 1.0 / d)) : NULL;
    mil_var *re = m ? mil_build_binary(b, "real_div", NM("eps_root"),
                                       scalar(b, prefix, "sqrt_eps", sqrt(eps)), m)
                    : NULL;
    mil_var *es = re ? mil_build_mul(b, NM("eps_scaled"), re, re) : NULL;
    mil_var *den = ms && es ? mil_build_add(b, NM("den"), ms, es) : NULL;
    mil_var *r = den ? mil_build_rsqrt(b, NM("rsqrt"), den, 0.0) : NULL;
    mil_var *y = r ? mil_build_mul(b, NM("normed"), xs, r) : NULL;
    return y && w ? mil_build_mul(b, NM("out"), y, w) : y;
#undef NM
}

nc_fp16 *lower_rope_matrix(int hd) {
    return lower_rope_matrix_partial(hd, hd);
}

nc_fp16 *lower_rope_matrix_partial(int hd, int rd) {
    nc_fp16 *r = calloc((size_t)hd * hd, sizeof *r);
    if (!r) return NULL;
    int h = rd / 2;
    for (int i = 0; i < h; i++) {
        r[(size_t)i * hd + i + h] = nc_f32_to_fp16(-1.0f);  /* out[i] = -x[i + h] */
        r[(size_t)(i + h) * hd + i] = nc_f32_to_fp16(1.0f); /* out[i + h] = x[i] */
    }
    return r;
}

mil_var *lower_rope(mil_builder *b, const char *prefix, mil_var *q4, mil_var *rot, mil_var *cos,
                    mil_var *sin) {
    char n[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", prefix, s), n)
    mil_var *qr = mil_build_matmul(b, NM("rot"), rot, q4, 0, 0);
    mil_var *qc = qr ? mil_build_mul(b, NM("cos"), q4, cos) : NULL;
    mil_var *qs = qc ? mil_build_mul(b, NM("sin"), qr, sin) : NULL;
    return qs ? mil_build_add(b, NM("out"), qc, qs) : NULL;
#undef NM
}

void lower_weight_shape4(lower_weight *w, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    w->rank = 4;
    w->dims[0] = d0;
    w->dims[1] = d1;
    w->dims[2] = d2;
    w->dims[3] = d3;
}

int lower_matmul_padded(int n, lower_matmul_pad p) {
    return p == LOWER_PAD_32 ? (n + 31) / 32 * 32 : n;
}

mil_var *lower_exp_nonpos(mil_builder *b, const char *prefix, mil_var *x, lower_exp_form f) {
    if (!x) return NULL;
    if (f == LOWER_EXP_OP) return mil_build_unary(b, "exp", prefix, x);
    char n[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", prefix, s), n)
    mil_var *s = mil_build_unary(b, "sigmoid", NM("sigmoid"), x); /* in (0, 1/2] */
    mil_var *nx = s ? mil_build_mul(b, NM("neg"), x, scalar(b, prefix, "minus_one", -1.0)) : NULL;
    /* sigmoid(-x) = 1 - sigmoid(x), in [1/2, 1), rounded once */
    mil_var *c = nx ? mil_build_unary(b, "sigmoid", NM("complement"), nx) : NULL;
    return c ? mil_build_binary(b, "real_div", prefix, s, c) : NULL;
#undef NM
}

mil_var *lower_gelu_tanh(mil_builder *b, const char *name, mil_var *x) {
    char n[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", name, s), n)
    /* x * (c0 + c1 x^2): x^3 never formed (it would overflow fp16 from |x| 41;
     * x^2 does from 256, where tanh is +-1 either way) */
    const double c0 = 0.7978845608028654, c1 = c0 * 0.044715;
    mil_var *x2 = x ? mil_build_mul(b, NM("sq"), x, x) : NULL;
    mil_var *a = x2 ? mil_build_mul(b, NM("cubic"), x2, scalar(b, name, "c1", c1)) : NULL;
    mil_var *p = a ? mil_build_add(b, NM("poly"), a, scalar(b, name, "c0", c0)) : NULL;
    mil_var *u = p ? mil_build_mul(b, NM("inner"), x, p) : NULL;
    mil_var *t = u ? mil_build_unary(b, "tanh", NM("tanh"), u) : NULL;
    mil_var *h = t ? mil_build_mul(b, NM("half"), x, scalar(b, name, "c_half", 0.5)) : NULL;
    mil_var *ht = h ? mil_build_mul(b, NM("half_tanh"), h, t) : NULL;
#undef NM
    return ht ? mil_build_add(b, name, h, ht) : NULL;
}

mil_var *lower_softcap(mil_builder *b, const char *name, mil_var *x, double cap) {
    char n[160];
    snprintf(n, sizeof n, "%s_scaled", name);
    mil_var *s = x ? mil_build_mul(b, n, x, scalar(b, name, "inv_cap", 1.0 / cap)) : NULL;
    snprintf(n, sizeof n, "%s_tanh", name);
    mil_var *t = s ? mil_build_unary(b, "tanh", n, s) : NULL;
    return t ? mil_build_mul(b, name, t, scalar(b, name, "cap", cap)) : NULL;
}

void lower_weight_add_one(lower_weight *w) {
    nc_fp16 *d = (nc_fp16 *)w->data;
    size_t n = 1;
    for (int i = 0; i < w->rank; i++)
        n *= (size_t)w->dims[i];
    for (size_t i = 0; d && i < n; i++)
        d[i] = nc_f32_to_fp16(nc_fp16_to_f32(d[i]) + 1.0f);
}
