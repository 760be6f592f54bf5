/* Qwen3 decoder layers and LM head written as MIL functions (see
 * qwen3_lower.h for the kernels and their I/O). Every function is built
 * with the builder, so a shape or argument mistake fails at the op that
 * makes it, and every finished program is checked against the ANE rules. */
#include "lower/qwen3_lower.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/check.h"
#include "mil/parse.h"

void lower_qwen3_layer_shapes(const qwen3_config *c, lower_layer_weights *w) {
    int64_t D = c->hidden_size, hd = c->head_dim, I = c->intermediate_size;
    int64_t qd = (int64_t)c->num_attention_heads * hd, kvd = (int64_t)c->num_key_value_heads * hd;
    lower_weight_shape4(&w->q, qd, D, 1, 1);
    lower_weight_shape4(&w->k, kvd, D, 1, 1);
    lower_weight_shape4(&w->v, kvd, D, 1, 1);
    lower_weight_shape4(&w->o, D, qd, 1, 1);
    lower_weight_shape4(&w->gate, I, D, 1, 1);
    lower_weight_shape4(&w->up, I, D, 1, 1);
    lower_weight_shape4(&w->down, D, I, 1, 1);
    lower_weight_shape4(&w->attn_norm, 1, D, 1, 1);
    lower_weight_shape4(&w->mlp_norm, 1, D, 1, 1);
    lower_weight_shape4(&w->q_norm, 1, 1, hd, 1);
    lower_weight_shape4(&w->k_norm, 1, 1, hd, 1);
    lower_weight_shape4(&w->out_gate, qd, D, 1, 1);
    lower_weight_shape4(&w->post_attn_norm, 1, D, 1, 1);
    lower_weight_shape4(&w->post_mlp_norm, 1, D, 1, 1);
}

/* A host input's name: a sliding-window layer's are NAME_local. */
static const char *host_input(const lower_plan *p, const char *name, char *buf, size_t cap) {
    if (!p->local) return name;
    snprintf(buf, cap, "%s_local", name);
    return buf;
}

/* Scores scale by 1/sqrt(query_pre_attn_scalar) (Gemma 3), else 1/sqrt(head_dim). */
static double attn_scale(const qwen3_config *c) {
    double d = c->query_pre_attn_scalar > 0 ? c->query_pre_attn_scalar : c->head_dim;
    return 1.0 / sqrt(d);
}

static mil_var *input4(mil_builder *b, const char *name, int64_t d0, int64_t d1, int64_t d2,
                       int64_t d3) {
    int64_t dims[4] = {d0, d1, d2, d3};
    const mil_type *t = mil_type_tensor(mil_builder_program(b), MIL_DT_FP16, 4, dims);
    return t ? mil_build_input(b, name, t) : NULL;
}

static mil_var *conv(mil_builder *b, const char *name, mil_var *x, lower_weight *w) {
    char wn[160];
    snprintf(wn, sizeof wn, "%s_weight", name);
    mil_var *wv = lower_shared_weight(b, wn, w);
    return wv ? mil_build_conv(b, name, x, wv, NULL, 1) : NULL;
}

/* g * S, or -1 (inferred by reshape) when S is the enumerated form's `?`. */
static int32_t times_s(int32_t g, int32_t S) {
    return S < 0 ? -1 : g * S;
}

static mil_var *reshape4(mil_builder *b, const char *name, mil_var *x, int32_t d0, int32_t d1,
                         int32_t d2, int32_t d3) {
    int32_t s[4] = {d0, d1, d2, d3};
    return x ? mil_build_reshape(b, name, x, 4, s) : NULL;
}

/* The values one layer's stages pass to each other inside one function.
 * A stage takes what an earlier stage of the same function made, or
 * declares it as a function input (named as in the 4-kernel layout), so one
 * set of stages writes every kernels-per-layer variant. */
typedef struct layer_vals {
    mil_var *x;                   /* the layer's input activation */
    mil_var *cs, *sn, *wr, *mask; /* host inputs */
    mil_var *q, *kn, *vn;         /* qkv's outputs */
    mil_var *gate;                /* qkv's output gate (gated attention only) */
    mil_var *kc, *vc;             /* the cache attn reads: kv's outputs, else inputs */
    mil_var *x_attn;              /* attn's output (mlp's input) */
    mil_var *x_out;               /* the function's activation output */
} layer_vals;

static void need(mil_builder *b, mil_var **v, const char *name, int64_t d1, int64_t d2,
                 int64_t d3) {
    if (!*v) *v = input4(b, name, 1, d1, d2, d3);
}

/* Every input of a kernel fusing `stages` (bits: 1 qkv, 2 kv, 4 attn,
 * 8 mlp), declared first as the builder requires, in the 4-kernel order. */
static void declare_inputs(mil_builder *b, const lower_plan *p, int S, int stages, int gated,
                           layer_vals *v) {
    const qwen3_config *c = p->cfg;
    int64_t D = c->hidden_size, hd = c->head_dim;
    int64_t kvd = (int64_t)c->num_key_value_heads * hd, qd = (int64_t)c->num_attention_heads * hd;
    char nm[32];
    if (stages & 1) {
        need(b, &v->x, "x", D, 1, S);
        v->cs = input4(b, host_input(p, "rope_cos", nm, sizeof nm), 1, 1, hd, S);
        v->sn = input4(b, host_input(p, "rope_sin", nm, sizeof nm), 1, 1, hd, S);
    }
    if (stages & 2) {
        need(b, &v->kc, "k_cache", kvd, 1, p->ctx);
        need(b, &v->vc, "v_cache", kvd, 1, p->ctx);
        if (!(stages & 1)) {
            need(b, &v->kn, "k_new", kvd, 1, S);
            need(b, &v->vn, "v_new", kvd, 1, S);
        }
        v->wr = input4(b, host_input(p, "kv_write", nm, sizeof nm), 1, 1, 1, p->ctx);
    }
    if (stages & 4) {
        need(b, &v->x, "x", D, 1, S);
        if (!(stages & 1)) need(b, &v->q, "q", qd, 1, S);
        if (!(stages & 1) && gated) need(b, &v->gate, "gate", qd, 1, S);
        need(b, &v->kc, "k_cache", kvd, 1, p->ctx);
        need(b, &v->vc, "v_cache", kvd, 1, p->ctx);
        v->mask = input4(b, host_input(p, "attn_mask", nm, sizeof nm), 1, 1, S, p->ctx);
    }
    if ((stages & 8) && !(stages & 4)) need(b, &v->x, "x", D, 1, S);
}

/* The conv form of RoPE's rotate-half (the default, docs/lowering.md
 * "Lowering forms"): x4 [1, n, hd, S] as [1, n*hd, 1, S] through a 1x1
 * conv of n groups, each group's [hd, hd] weight the rotate-half matrix R
 * (entries 0, +-1: one term per output, exact in fp16). No matmul, so
 * qkv holds convs only (ironmill saw a program mixing conv and matmul
 * refused) and nothing broadcasts over the heads. */
static mil_var *rope_conv(mil_builder *b, const char *prefix, mil_var *x4, int32_t n, int32_t hd,
                          int32_t G, int32_t S, const lower_weight *rope, mil_var *cs,
                          mil_var *sn) {
    char nm[160];
    size_t blk = (size_t)hd * (size_t)hd;
    nc_fp16 *wt = malloc((size_t)n * blk * sizeof *wt);
    if (!wt) return NULL;
    for (int32_t g = 0; g < n; g++)
        memcpy(wt + (size_t)g * blk, rope->data, blk * sizeof *wt);
    int64_t d[4] = {(int64_t)n * hd, hd, 1, 1};
    snprintf(nm, sizeof nm, "%s_rot_weight", prefix);
    mil_var *w = mil_build_const_tensor(b, nm, MIL_DT_FP16, 4, d, wt);
    free(wt);
    /* G == 0: the per-head view [1, n, hd, S]; else the grouped form's
     * [n, hd, G, S] (the group's heads side by side) */
    snprintf(nm, sizeof nm, "%s_flat", prefix);
    mil_var *xf = w ? reshape4(b, nm, x4, 1, n * hd, G ? G : 1, S) : NULL;
    snprintf(nm, sizeof nm, "%s_rot_flat", prefix);
    mil_var *rf = xf ? mil_build_conv(b, nm, xf, w, NULL, n) : NULL;
    snprintf(nm, sizeof nm, "%s_rot", prefix);
    mil_var *r4 = !rf ? NULL
                  : G ? reshape4(b, nm, rf, n, hd, G, S)
                      : reshape4(b, nm, rf, 1, n, hd, S);
    snprintf(nm, sizeof nm, "%s_cos", prefix);
    mil_var *qc = r4 ? mil_build_mul(b, nm, x4, cs) : NULL;
    snprintf(nm, sizeof nm, "%s_sin", prefix);
    mil_var *qs = qc ? mil_build_mul(b, nm, r4, sn) : NULL;
    snprintf(nm, sizeof nm, "%s_out", prefix);
    return qs ? mil_build_add(b, nm, qc, qs) : NULL;
}

/* The grouped attention form's q (or k, G = 1): channels in (kv head,
 * dim, group) order (q_proj's rows permuted at compile time), viewed as
 * [n, hd, G, S]: the per-head RMSNorm over axis 1, RoPE by the conv form;
 * back as [1, n*hd*G, 1, S]. */
static mil_var *grouped_norm_rope(mil_builder *b, const char *prefix, mil_var *x, int32_t n,
                                  int32_t hd, int32_t G, int32_t S, const lower_weight *norm,
                                  double eps, const lower_weight *rope, mil_var *cs, mil_var *sn) {
    char nm[160];
    lower_weight nw1 = *norm; /* [1, 1, hd, 1] as [1, hd, 1, 1] */
    lower_weight_shape4(&nw1, 1, hd, 1, 1);
    lower_weight_forget(&nw1);
    snprintf(nm, sizeof nm, "%s_norm_weight", prefix);
    /* no norm weight (Llama): the heads go to RoPE as they are */
    mil_var *w = norm->data ? lower_shared_weight(b, nm, &nw1) : x;
    snprintf(nm, sizeof nm, "%s_by_dim", prefix);
    mil_var *x4 = w ? reshape4(b, nm, x, n, hd, G, S) : NULL;
    snprintf(nm, sizeof nm, "%s_norm", prefix);
    mil_var *xn = !x4 ? NULL : norm->data ? lower_rmsnorm(b, nm, x4, 1, hd, eps, w) : x4;
    snprintf(nm, sizeof nm, "%s_rope", prefix);
    mil_var *r = xn ? rope_conv(b, nm, xn, n, hd, G, S, rope, cs, sn) : NULL;
    return r ? reshape4(b, prefix, r, 1, n * hd * G, 1, S) : NULL;
}

/* The grouped form of stage_qkv's heads (see grouped_norm_rope). */
static int qk_grouped(mil_builder *b, const lower_plan *p, int S, lower_layer_weights *w,
                      lower_weight *rope, mil_var *q, mil_var *k, layer_vals *v) {
    const qwen3_config *c = p->cfg;
    int32_t H = c->num_attention_heads, KV = c->num_key_value_heads, hd = c->head_dim;
    mil_var *cs = reshape4(b, "rope_cos_grouped", v->cs, 1, hd, 1, S);
    mil_var *sn = cs ? reshape4(b, "rope_sin_grouped", v->sn, 1, hd, 1, S) : NULL;
    v->q = sn ? grouped_norm_rope(b, "q", q, KV, hd, H / KV, S, &w->q_norm, c->rms_norm_eps, rope,
                                  cs, sn)
              : NULL;
    v->kn = v->q ? grouped_norm_rope(b, "k_new", k, KV, hd, 1, S, &w->k_norm, c->rms_norm_eps, rope,
                                     cs, sn)
                 : NULL;
    return v->kn != NULL;
}

/* rmsnorm + q/k/v projections + per-head q/k RMSNorm + RoPE. */
static int stage_qkv(mil_builder *b, const lower_plan *p, int S, lower_layer_weights *w,
                     lower_weight *rope, layer_vals *v) {
    const qwen3_config *c = p->cfg;
    int32_t H = c->num_attention_heads, KV = c->num_key_value_heads, hd = c->head_dim;
    mil_var *x = v->x, *cs = v->cs, *sn = v->sn;
    mil_var *nw = lower_shared_weight(b, "attn_norm_weight", &w->attn_norm);
    mil_var *h =
        x && nw ? lower_rmsnorm(b, "attn_norm", x, 1, c->hidden_size, c->rms_norm_eps, nw) : NULL;
    mil_var *q = h ? conv(b, "q_proj", h, &w->q) : NULL;
    mil_var *k = q ? conv(b, "k_proj", h, &w->k) : NULL;
    mil_var *vv = k ? conv(b, "v_new", h, &w->v) : NULL;
    if (vv && cs && sn && p->forms.attention == LOWER_ATTN_GROUPED) {
        v->vn = vv;
        return qk_grouped(b, p, S, w, rope, q, k, v);
    }
    int conv_rope = p->forms.rope == LOWER_ROPE_CONV;
    mil_var *rot = vv && !conv_rope ? lower_shared_weight(b, "rope_rotate_half", rope) : vv;
    /* Llama has no per-head q/k norms (q_norm.data NULL): RoPE takes the heads as they are */
    int qkn = w->q_norm.data != NULL;
    mil_var *qw = rot && qkn ? lower_shared_weight(b, "q_norm_weight", &w->q_norm) : rot;
    mil_var *kw = qw && qkn ? lower_shared_weight(b, "k_norm_weight", &w->k_norm) : qw;
    /* heads on axis 1, head_dim on axis 2: [1, H, hd, S] */
    mil_var *q4 = kw ? reshape4(b, "q_heads", q, 1, H, hd, S) : NULL;
    mil_var *k4 = q4 ? reshape4(b, "k_heads", k, 1, KV, hd, S) : NULL;
    mil_var *qn = !k4   ? NULL
                  : qkn ? lower_rmsnorm(b, "q_norm", q4, 2, hd, c->rms_norm_eps, qw)
                        : q4;
    mil_var *kn = !qn   ? NULL
                  : qkn ? lower_rmsnorm(b, "k_norm", k4, 2, hd, c->rms_norm_eps, kw)
                        : k4;
    mil_var *qr = !kn || !cs || !sn ? NULL
                  : conv_rope       ? rope_conv(b, "q_rope", qn, H, hd, 0, S, rope, cs, sn)
                                    : lower_rope(b, "q_rope", qn, rot, cs, sn);
    mil_var *kr = !qr         ? NULL
                  : conv_rope ? rope_conv(b, "k_rope", kn, KV, hd, 0, S, rope, cs, sn)
                              : lower_rope(b, "k_rope", kn, rot, cs, sn);
    v->q = kr ? reshape4(b, "q", qr, 1, H * hd, 1, S) : NULL;
    v->kn = v->q ? reshape4(b, "k_new", kr, 1, KV * hd, 1, S) : NULL;
    v->vn = vv;
    if (v->kn && w->out_gate.data) v->gate = conv(b, "gate", h, &w->out_gate);
    return v->kn != NULL && (!w->out_gate.data || v->gate);
}

/* The cache update: gather spreads the S new columns over the whole context
 * with constant indices j mod S; select keeps them where kv_write is 1.
 * The indices are uint16: the ANE compiler refuses int32 gather indices
 * ("Unsupported tensor data type: int32", docs/ane-rules.md), and a context
 * is at most 65,535 (lower_qwen3_check_ctx). Sets v->kc/vc to the new cache. */
/* The onehot form (the default, docs/lowering.md "Lowering forms"): the
 * spread as a matmul by a constant placement matrix P [S, ctx] with
 * P[c][j] = 1 where j mod S == c -- one term per output, so exact in fp16
 * -- on the [1, 1, C, S] view of the new rows: no gather, and the kernel
 * is anchored by a matmul (an elementwise-only kernel is reported refused
 * at load). */
static mil_var *spread_onehot(mil_builder *b, const lower_plan *p, int S, const char *name,
                              mil_var *x, mil_var *place) {
    int32_t C = (int32_t)x->type->dims[1];
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "%s_rows", name);
    snprintf(n2, sizeof n2, "%s_placed", name);
    mil_var *x4 = reshape4(b, n1, x, 1, 1, C, S);
    mil_var *y = x4 ? mil_build_matmul(b, n2, x4, place, 0, 0) : NULL;
    return y ? reshape4(b, name, y, 1, C, 1, p->ctx) : NULL;
}

static int stage_kv_onehot(mil_builder *b, const lower_plan *p, int S, layer_vals *v) {
    mil_var *kc = v->kc, *vc = v->vc, *kn = v->kn, *vn = v->vn, *wr = v->wr;
    size_t n = (size_t)S * (size_t)p->ctx;
    nc_fp16 *pl = calloc(n, sizeof *pl);
    if (!pl) return 0;
    for (int j = 0; j < p->ctx; j++)
        pl[(size_t)(j % S) * (size_t)p->ctx + (size_t)j] = 0x3C00; /* 1.0 */
    int64_t d[4] = {1, 1, S, p->ctx};
    mil_var *place = wr ? mil_build_const_tensor(b, "spread_place", MIL_DT_FP16, 4, d, pl) : NULL;
    free(pl);
    mil_var *m = place ? mil_build_binary(b, "greater", "write_mask", wr,
                                          mil_build_const_scalar(b, "half", MIL_DT_FP16, 0.5))
                       : NULL;
    mil_var *ku = m && kn ? spread_onehot(b, p, S, "k_spread", kn, place) : NULL;
    mil_var *vu = ku && vn ? spread_onehot(b, p, S, "v_spread", vn, place) : NULL;
    v->kc = vu && kc ? mil_build_select(b, "k_cache_out", m, ku, kc) : NULL;
    v->vc = v->kc && vc ? mil_build_select(b, "v_cache_out", m, vu, vc) : NULL;
    return v->vc != NULL;
}

static int stage_kv(mil_builder *b, const lower_plan *p, int S, layer_vals *v) {
    if (p->forms.kv_update == LOWER_KV_ONEHOT) return stage_kv_onehot(b, p, S, v);
    mil_var *kc = v->kc, *vc = v->vc, *kn = v->kn, *vn = v->vn, *wr = v->wr;
    uint16_t *idx = malloc((size_t)p->ctx * sizeof *idx);
    if (!idx) return 0;
    for (int j = 0; j < p->ctx; j++)
        idx[j] = (uint16_t)(j % S);
    int64_t n = p->ctx;
    mil_var *iv =
        wr ? mil_build_const_tensor(b, "spread_indices", MIL_DT_UINT16, 1, &n, idx) : NULL;
    free(idx);
    /* bools may not cross the boundary: the mask arrives as fp16 0/1 */
    mil_var *m = iv ? mil_build_binary(b, "greater", "write_mask", wr,
                                       mil_build_const_scalar(b, "half", MIL_DT_FP16, 0.5))
                    : NULL;
    mil_var *ku = m && kn ? mil_build_gather(b, "k_spread", kn, iv, 3) : NULL;
    mil_var *vu = ku && vn ? mil_build_gather(b, "v_spread", vn, iv, 3) : NULL;
    v->kc = vu && kc ? mil_build_select(b, "k_cache_out", m, ku, kc) : NULL;
    v->vc = v->kc && vc ? mil_build_select(b, "v_cache_out", m, vu, vc) : NULL;
    return v->vc != NULL;
}

/* x + y, after Gemma's post-norm of y when the layer has one (post.data). */
static mil_var *residual(mil_builder *b, const lower_plan *p, const char *prefix, mil_var *x,
                         mil_var *y, lower_weight *post, const char *out_name) {
    const qwen3_config *c = p->cfg;
    char nm[64];
    snprintf(nm, sizeof nm, "%s_weight", prefix);
    mil_var *pw = y && post->data ? lower_shared_weight(b, nm, post) : NULL;
    if (pw) y = lower_rmsnorm(b, prefix, y, 1, c->hidden_size, c->rms_norm_eps, pw);
    return y ? mil_build_add(b, out_name, x, y) : NULL;
}

/* Grouped-query attention written out, then o_proj and the residual. Query
 * heads sharing a KV head form one batch entry [KV, G, ...] so the cache is
 * read once per group and never copied. */
/* The grouped form: q [1, KV, hd, G*S] (channels in (kv head, dim, group)
 * order) against the cache [1, KV, hd, ctx]: both matmuls have equal batch
 * dims [1, KV]; the output [1, KV, hd, G*S] is in the same order, which
 * o_proj's columns were permuted to at compile time. */
static int attn_grouped(mil_builder *b, const lower_plan *p, int S, lower_layer_weights *w,
                        layer_vals *v, const char *out_name) {
    const qwen3_config *c = p->cfg;
    int32_t H = c->num_attention_heads, KV = c->num_key_value_heads, hd = c->head_dim;
    int32_t G = H / KV, ctx = p->ctx;
    mil_var *x = v->x, *q = v->q, *kc = v->kc, *vc = v->vc, *mask = v->mask;
    static const int32_t swap12[4] = {0, 2, 1, 3};
    if (p->attn_q_by_head && q) { /* (kv head, group, dim) -> (kv head, dim, group) */
        mil_var *qh = reshape4(b, "q_by_head", q, KV, G, hd, S);
        q = qh ? mil_build_transpose(b, "q_by_dim", qh, 4, swap12) : NULL;
    }
    mil_var *q4 = x && q && kc && vc && mask ? reshape4(b, "q_groups", q, 1, KV, hd, times_s(G, S)) : NULL;
    mil_var *qs = q4 ? mil_build_mul(b, "q_scaled", q4,
                                     mil_build_const_scalar(b, "scale", MIL_DT_FP16, attn_scale(c)))
                     : NULL;
    mil_var *k4 = qs ? reshape4(b, "k_groups", kc, 1, KV, hd, ctx) : NULL;
    mil_var *v4 = k4 ? reshape4(b, "v_groups", vc, 1, KV, hd, ctx) : NULL;
    /* scores [1, KV, G*S, ctx] = q^T k; the mask per (group, column) */
    mil_var *sc = v4 ? mil_build_matmul(b, "scores", qs, k4, 1, 0) : NULL;
    mil_var *s4 = sc ? reshape4(b, "scores_heads", sc, KV, G, S, ctx) : NULL;
    mil_var *sm = s4 ? mil_build_add(b, "scores_masked", s4, mask) : NULL;
    mil_var *pr = sm ? mil_build_softmax(b, "probs", sm, -1) : NULL;
    mil_var *p4 = pr ? reshape4(b, "probs_groups", pr, 1, KV, times_s(G, S), ctx) : NULL;
    /* out [1, KV, hd, G*S] = v p^T */
    mil_var *at = p4 ? mil_build_matmul(b, "attn", v4, p4, 0, 1) : NULL;
    if (at && p->attn_q_by_head) { /* back to (kv head, group, dim): o_proj as compiled */
        mil_var *ad = reshape4(b, "attn_by_dim", at, KV, hd, G, S);
        at = ad ? mil_build_transpose(b, "attn_by_head", ad, 4, swap12) : NULL;
    }
    mil_var *a2 = at ? reshape4(b, "attn_flat", at, 1, H * hd, 1, S) : NULL;
    mil_var *o = a2 ? conv(b, "o_proj", a2, &w->o) : NULL;
    v->x_attn = residual(b, p, "post_attn_norm", x, o, &w->post_attn_norm, out_name);
    return v->x_attn != NULL;
}

static int stage_attn(mil_builder *b, const lower_plan *p, int S, lower_layer_weights *w,
                      layer_vals *v, const char *out_name) {
    const qwen3_config *c = p->cfg;
    int32_t H = c->num_attention_heads, KV = c->num_key_value_heads, hd = c->head_dim;
    int32_t G = H / KV, ctx = p->ctx;
    mil_var *x = v->x, *q = v->q, *kc = v->kc, *vc = v->vc, *mask = v->mask;
    if (p->forms.attention == LOWER_ATTN_GROUPED) return attn_grouped(b, p, S, w, v, out_name);
    mil_var *q4 = x && q && kc && vc && mask ? reshape4(b, "q_groups", q, KV, G, hd, S) : NULL;
    mil_var *qs = q4 ? mil_build_mul(b, "q_scaled", q4,
                                     mil_build_const_scalar(b, "scale", MIL_DT_FP16, attn_scale(c)))
                     : NULL;
    mil_var *k4 = qs ? reshape4(b, "k_groups", kc, KV, 1, hd, ctx) : NULL;
    mil_var *v4 = k4 ? reshape4(b, "v_groups", vc, KV, 1, hd, ctx) : NULL;
    /* scores [KV, G, S, ctx] = q^T k */
    mil_var *sc = v4 ? mil_build_matmul(b, "scores", qs, k4, 1, 0) : NULL;
    mil_var *sm = sc ? mil_build_add(b, "scores_masked", sc, mask) : NULL;
    /* softmax subtracts the row max before exp (mil-interpreter.md, MIL spec) */
    mil_var *pr = sm ? mil_build_softmax(b, "probs", sm, -1) : NULL;
    /* out [KV, G, hd, S] = v p^T: heads come out channel-major, no transpose */
    mil_var *at = pr ? mil_build_matmul(b, "attn", v4, pr, 0, 1) : NULL;
    mil_var *a2 = at ? reshape4(b, "attn_flat", at, 1, H * hd, 1, S) : NULL;
    if (a2 && v->gate) { /* gated attention: out * sigmoid(gate), per channel */
        mil_var *sg = mil_build_unary(b, "sigmoid", "gate_sigmoid", v->gate);
        a2 = sg ? mil_build_mul(b, "attn_gated", a2, sg) : NULL;
    }
    mil_var *o = a2 ? conv(b, "o_proj", a2, &w->o) : NULL;
    v->x_attn = residual(b, p, "post_attn_norm", x, o, &w->post_attn_norm, out_name);
    return v->x_attn != NULL;
}

/* rmsnorm + SiLU-gated MLP + residual; its input is attn's output, or an
 * input named x (the 4-kernel layout binds it to the x2 buffer). */
static int stage_mlp(mil_builder *b, const lower_plan *p, int S, lower_layer_weights *w,
                     layer_vals *v) {
    const qwen3_config *c = p->cfg;
    (void)S;
    mil_var *x = v->x_attn ? v->x_attn : v->x;
    mil_var *nw = x ? lower_shared_weight(b, "mlp_norm_weight", &w->mlp_norm) : NULL;
    mil_var *h =
        nw ? lower_rmsnorm(b, "mlp_norm", x, 1, c->hidden_size, c->rms_norm_eps, nw) : NULL;
    mil_var *g = h ? conv(b, "gate_proj", h, &w->gate) : NULL;
    mil_var *u = g ? conv(b, "up_proj", h, &w->up) : NULL;
    mil_var *a = !u                              ? NULL
                 : c->act == QWEN3_ACT_GELU_TANH ? lower_gelu_tanh(b, "gate_act", g)
                                                 : mil_build_unary(b, "silu", "gate_act", g);
    mil_var *gu = a ? mil_build_mul(b, "gated", a, u) : NULL;
    mil_var *d = gu ? conv(b, "down_proj", gu, &w->down) : NULL;
    v->x_out = residual(b, p, "post_mlp_norm", x, d, &w->post_mlp_norm, "x_out");
    return v->x_out != NULL;
}

/* The kernels of each kernels-per-layer variant, in execution order, and
 * the stages each one fuses (bits: 1 qkv, 2 kv, 4 attn, 8 mlp). */
typedef struct kernel_def {
    const char *name;
    int stages;
} kernel_def;

static const kernel_def variant4[] = {{"qkv", 1}, {"kv", 2}, {"attn", 4}, {"mlp", 8}};
static const kernel_def variant3[] = {{"qkv", 1}, {"kvattn", 2 | 4}, {"mlp", 8}};
static const kernel_def variant2[] = {{"qkva", 1 | 2 | 4}, {"mlp", 8}};
static const kernel_def variant1[] = {{"layer", 1 | 2 | 4 | 8}};
/* --kv-update host: the cache update is the host's, between qkv and attn */
static const kernel_def variant_host[] = {{"qkv", 1}, {"attn", 4}, {"mlp", 8}};

static const kernel_def *variant(const lower_plan *p, int *n) {
    if (p->forms.kv_update == LOWER_KV_HOST) {
        *n = 3;
        return variant_host;
    }
    switch (p->kernels_per_layer) {
    case 1:
        *n = 1;
        return variant1;
    case 2:
        *n = 2;
        return variant2;
    case 3:
        *n = 3;
        return variant3;
    default:
        *n = 4;
        return variant4;
    }
}

int lower_kernels_per_layer_valid(int kpl) {
    return kpl >= 1 && kpl <= 4;
}

/* One kernel: its stages in order, then the outputs the stages leave for
 * the next kernel or the host (named as in docs/lowering.md). */
static void build_kernel(mil_builder *b, const lower_plan *p, int S, lower_layer_weights *w,
                         lower_weight *rope, int stages) {
    layer_vals v = {0};
    declare_inputs(b, p, S, stages, w->out_gate.data != NULL, &v);
    int ok = 1;
    if (ok && (stages & 1)) ok = stage_qkv(b, p, S, w, rope, &v);
    if (ok && (stages & 2)) ok = stage_kv(b, p, S, &v);
    if (ok && (stages & 4)) ok = stage_attn(b, p, S, w, &v, stages & 8 ? "x_attn" : "x_out");
    if (ok && (stages & 8)) ok = stage_mlp(b, p, S, w, &v);
    if (!ok) return;
    mil_var *outs[4];
    int n = 0;
    if (stages == 1) {
        outs[n++] = v.q;
        outs[n++] = v.kn;
        outs[n++] = v.vn;
        if (v.gate) outs[n++] = v.gate;
    } else {
        if (stages & (4 | 8)) outs[n++] = stages & 8 ? v.x_out : v.x_attn;
        if (stages & 2) {
            outs[n++] = v.kc;
            outs[n++] = v.vc;
        }
    }
    mil_build_done(b, outs, n);
}

void lower_qwen3_mlp_function(mil_builder *b, const lower_plan *p, int S, lower_layer_weights *w) {
    build_kernel(b, p, S, w, NULL, 8);
}

nc_status lower_program_finish(mil_builder *b, mil_program **out, nc_error *err) {
    if (mil_builder_error(b)->code != NC_OK) {
        *err = *mil_builder_error(b);
        mil_builder_free(b);
        return err->code;
    }
    mil_program *prog = NULL;
    NC_TRY(mil_builder_finish(b, &prog, err));
    nc_status st = mil_check_strict(prog, 1, err);
    if (st != NC_OK) {
        mil_program_free(prog);
        return st;
    }
    *out = prog;
    return NC_OK;
}

nc_status lower_qwen3_check_ctx(int ctx, nc_error *err) {
    if (ctx > LOWER_MAX_CTX)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "--ctx %d: the ANE KV update gathers with uint16 indices, so the context "
                       "is at most %d",
                       ctx, LOWER_MAX_CTX);
    return NC_OK;
}

void lower_qwen3_group_copy(const qwen3_config *c, const nc_fp16 *src, nc_fp16 *dst,
                            int64_t other, int rows, int inverse) {
    int64_t H = c->num_attention_heads, KV = c->num_key_value_heads, hd = c->head_dim, G = H / KV;
    int64_t n = H * hd;
    for (int64_t kv = 0; kv < KV; kv++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t i = 0; i < hd; i++) {
                int64_t orig = (kv * G + g) * hd + i, grouped = (kv * hd + i) * G + g;
                int64_t from = inverse ? grouped : orig, to = inverse ? orig : grouped;
                if (rows)
                    memcpy(dst + to * other, src + from * other, (size_t)other * sizeof *dst);
                else
                    for (int64_t o = 0; o < other; o++)
                        dst[o * n + to] = src[o * n + from];
            }
}

nc_status lower_qwen3_group_order(const qwen3_config *c, lower_weight *w, int rows, nc_error *err) {
    int64_t n = (int64_t)c->num_attention_heads * c->head_dim, other = rows ? w->dims[1] : w->dims[0];
    nc_fp16 *tmp = malloc((size_t)(n * other) * sizeof *tmp);
    if (!tmp) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_fp16 *d = (nc_fp16 *)w->data;
    lower_qwen3_group_copy(c, d, tmp, other, rows, 0);
    memcpy(d, tmp, (size_t)(n * other) * sizeof *tmp);
    free(tmp);
    return NC_OK;
}

int lower_qwen3_kernels(const lower_plan *p) {
    int nk;
    variant(p, &nk);
    return nk;
}

const char *lower_qwen3_kernel_name(const lower_plan *p, int k) {
    int nk;
    const kernel_def *ks = variant(p, &nk);
    return k >= 0 && k < nk ? ks[k].name : "?";
}

nc_status lower_qwen3_layer_program(const lower_plan *p, lower_layer_weights *w, lower_weight *rope,
                                    const char *dir, mil_program **out, nc_error *err) {
    return lower_qwen3_layer_part(p, -1, -1, w, rope, dir, out, err);
}

/* The enumerated form's FlexibleShapeInformation of fn (its inputs' `?`
 * is S): the first bucket's shapes as DefaultShapes, every bucket's as
 * EnumeratedShapes, keyed by 8 hex digits of a hash of the shapes, the
 * attribute coremlc writes (docs/lowering.md). */
static nc_status enumerated_attrs(mil_function *fn, const lower_plan *p, nc_error *err) {
    size_t cap = 16384, len = 0;
    char *t = malloc(cap);
    if (!t) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(t + len, cap - len, __VA_ARGS__);                                        \
        if (k_ > 0) len = len + (size_t)k_ < cap ? len + (size_t)k_ : cap - 1;                     \
    } while (0)
    PUT("[FlexibleShapeInformation = tuple<tuple<string, dict<string, tensor<int32, [?]>>>, "
        "tuple<string, dict<string, dict<string, tensor<int32, [?]>>>>>((");
    for (int s = -1; s < p->n_seqs; s++) { /* -1: the default shapes */
        int S = p->seqs[s < 0 ? 0 : s];
        if (s == -1) PUT("(\"DefaultShapes\", {");
        if (s == 0) PUT("}), (\"EnumeratedShapes\", {");
        size_t mark = len;
        for (int i = 0; i < fn->n_inputs; i++) {
            const mil_type *ty = fn->inputs[i]->type;
            PUT("%s{\"%s\", [", i ? ", " : "", fn->inputs[i]->name);
            for (int d = 0; d < ty->rank; d++)
                PUT("%s%lld", d ? ", " : "", (long long)(ty->dims[d] < 0 ? S : ty->dims[d]));
            PUT("]}");
        }
        if (s >= 0) { /* {"<key>", {{"x", [...]}, ...}} */
            uint32_t h = 2166136261u;
            for (size_t i = mark; i < len; i++)
                h = (h ^ (unsigned char)t[i]) * 16777619u;
            char shapes[8192];
            snprintf(shapes, sizeof shapes, "%s", t + mark);
            len = mark;
            PUT("%s{\"%08x\", {%s}}", s ? ", " : "", (unsigned)h, shapes);
        }
    }
    PUT("})))]");
#undef PUT
    nc_status st = len + 1 >= cap ? nc_fail(err, NC_ERR_INTERNAL, "%s: shapes too long", fn->name)
                                  : mil_function_parse_attrs(fn, t, err);
    free(t);
    return st;
}

/* The enumerated bucket form: one function per kernel (its name), S `?`. */
static nc_status enumerated_part(mil_builder *b, const lower_plan *p, int only_k,
                                 lower_layer_weights *w, lower_weight *rope, nc_error *err) {
    int nk;
    const kernel_def *ks = variant(p, &nk);
    for (int k = 0; k < nk; k++) {
        if (only_k >= 0 && k != only_k) continue;
        if (mil_build_function(b, ks[k].name, "ios18") != NC_OK) break;
        build_kernel(b, p, MIL_DIM_UNKNOWN, w, rope, ks[k].stages);
        mil_program *prog = mil_builder_program(b);
        if (mil_builder_error(b)->code == NC_OK)
            NC_TRY(enumerated_attrs(prog->functions[prog->n_functions - 1], p, err));
    }
    return NC_OK;
}

nc_status lower_qwen3_layer_part(const lower_plan *p, int only_k, int only_s,
                                 lower_layer_weights *w, lower_weight *rope, const char *dir,
                                 mil_program **out, nc_error *err) {
    mil_builder *b;
    NC_TRY(lower_qwen3_check_ctx(p->ctx, err));
    NC_TRY(mil_builder_new(&b, dir, err));
    if (p->forms.bucket_form == LOWER_BUCKETS_ENUMERATED) {
        nc_status st = enumerated_part(b, p, only_k, w, rope, err);
        if (st) {
            mil_builder_free(b);
            return st;
        }
        return lower_program_finish(b, out, err);
    }
    int nk;
    const kernel_def *ks = variant(p, &nk);
    for (int s = 0; s < p->n_seqs; s++) {
        int S = p->seqs[s];
        if (only_s >= 0 && s != only_s) continue;
        for (int k = 0; k < nk; k++) {
            if (only_k >= 0 && k != only_k) continue;
            char fn[64];
            snprintf(fn, sizeof fn, "%s_s%d", ks[k].name, S);
            if (mil_build_function(b, fn, "ios18") != NC_OK) break;
            build_kernel(b, p, S, w, rope, ks[k].stages);
        }
    }
    return lower_program_finish(b, out, err);
}

/* Chunk w's logits named `name`: one conv, or, when slice_rows > 0 and
 * the chunk is wider, convs over row slices of its weight (each a blob of
 * its own: a row slice of [rows, D, 1, 1] is a contiguous range) joined
 * along the channels into the same [1, rows, 1, S] output. */
static mil_var *head_conv(mil_builder *b, const char *name, mil_var *h, lower_weight *w,
                          int64_t slice_rows) {
    int64_t R = w->dims[0], D = w->dims[1];
    if (slice_rows <= 0 || R <= slice_rows || !h) return h ? conv(b, name, h, w) : NULL;
    if (w->pal) return NULL; /* palettized: the tables are per chunk, not per slice */
    int n = (int)((R + slice_rows - 1) / slice_rows);
    int64_t per = (R + n - 1) / n;
    lower_weight *sl = calloc((size_t)n, sizeof *sl);
    mil_var **parts = calloc((size_t)n, sizeof *parts);
    mil_var *y = NULL;
    int ok = sl && parts;
    for (int j = 0; ok && j < n; j++) {
        int64_t lo = j * per, rows = lo + per > R ? R - lo : per;
        char nm[96];
        sl[j].data = w->data + lo * D;
        lower_weight_shape4(&sl[j], rows, D, 1, 1);
        snprintf(nm, sizeof nm, "%s_rows%d", name, j);
        parts[j] = conv(b, nm, h, &sl[j]);
        ok = parts[j] != NULL;
    }
    if (ok) y = mil_build_concat(b, name, parts, n, 1);
    free(sl);
    free(parts);
    return y;
}

nc_status lower_qwen3_head_program(const lower_plan *p, lower_weight *final_norm,
                                   lower_weight *chunks, int n_chunks, int first, const char *dir,
                                   mil_program **out, nc_error *err) {
    return lower_qwen3_head_program_sliced(p, final_norm, chunks, n_chunks, first, 0, dir, out,
                                           err);
}

nc_status lower_qwen3_head_program_sliced(const lower_plan *p, lower_weight *final_norm,
                                          lower_weight *chunks, int n_chunks, int first,
                                          int64_t slice_rows, const char *dir, mil_program **out,
                                          nc_error *err) {
    const qwen3_config *c = p->cfg;
    mil_builder *b;
    NC_TRY(mil_builder_new(&b, dir, err));
    char fn[64];
    snprintf(fn, sizeof fn, "head_s%d", LOWER_HEAD_SEQ);
    mil_var *outs[LOWER_MAX_HEAD_CHUNKS];
    if (n_chunks > LOWER_MAX_HEAD_CHUNKS) {
        mil_builder_free(b);
        return nc_fail(err, NC_ERR_UNSUPPORTED, "LM head: %d chunks (at most %d)", n_chunks,
                       LOWER_MAX_HEAD_CHUNKS);
    }
    if (mil_build_function(b, fn, "ios18") == NC_OK) {
        mil_var *x = input4(b, "x", 1, c->hidden_size, 1, LOWER_HEAD_SEQ);
        mil_var *nw = x ? lower_shared_weight(b, "final_norm_weight", final_norm) : NULL;
        mil_var *h =
            nw ? lower_rmsnorm(b, "final_norm", x, 1, c->hidden_size, c->rms_norm_eps, nw) : NULL;
        int ok = h != NULL;
        for (int i = 0; ok && i < n_chunks; i++) {
            char name[32];
            snprintf(name, sizeof name, "logits_%d", first + i);
            /* Gemma 3's final softcap: cap * tanh(logits / cap) */
            float cap = c->final_softcap;
            char raw[48];
            snprintf(raw, sizeof raw, "%s_raw", name);
            outs[i] = cap > 0 ? lower_softcap(b, name,
                                              head_conv(b, raw, h, &chunks[i], slice_rows), cap)
                              : head_conv(b, name, h, &chunks[i], slice_rows);
            ok = outs[i] != NULL;
        }
        if (ok) mil_build_done(b, outs, n_chunks);
    }
    return lower_program_finish(b, out, err);
}
