/* ModernBERT encoder layers written as MIL (modernbert_lower.h): the
 * equivalent transformations of docs/encoders-ane.md — 1x1 convs, per-head
 * attention with the softmax over the key axis, RoPE per head, LayerNorm
 * over channels rescaled for fp16, exact GELU written out with erf. */
#include "lower/modernbert_lower.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/check.h"

void mb_lower_shapes(const modernbert_config *c, mb_encoder_weights *w) {
    int64_t D = c->hidden_size, I = c->intermediate_size, hd = c->head_dim;
    for (int l = 0; l < c->num_hidden_layers; l++) {
        mb_layer_weights *lw = &w->layers[l];
        lower_weight_shape4(&lw->attn_norm, 1, D, 1, 1);
        lower_weight_shape4(&lw->wqkv, 3 * D, D, 1, 1);
        lower_weight_shape4(&lw->wo, D, D, 1, 1);
        lower_weight_shape4(&lw->mlp_norm, 1, D, 1, 1);
        lower_weight_shape4(&lw->wi, 2 * I, D, 1, 1);
        lower_weight_shape4(&lw->wo_mlp, D, I, 1, 1);
        for (int h = 0; lw->wo_heads && h < c->num_attention_heads; h++)
            lower_weight_shape4(&lw->wo_heads[h], D, hd, 1, 1);
    }
    lower_weight_shape4(&w->final_norm, 1, D, 1, 1);
    lower_weight_shape4(&w->rot_head, hd, hd, 1, 1);
    lower_weight_shape4(&w->rot_all, D, D, 1, 1);
}

void mb_lower_layer_var(char *buf, size_t cap, int layer) {
    snprintf(buf, cap, "l%02d_out", layer);
}

int mb_lower_needs_local_mask(const modernbert_config *c, int seq) {
    int any_local = 0;
    for (int l = 0; l < c->num_hidden_layers; l++)
        any_local |= !c->is_global[l];
    return any_local && seq - 1 > c->local_attention / 2;
}

/* --- small builders ---------------------------------------------------- */

typedef struct fn_ctx {
    mil_builder *b;
    const modernbert_config *c;
    const mb_lower_options *opt;
    int B, L;
    mil_var *cos[2], *sin[2]; /* [0] global theta, [1] local theta */
    mil_var *mask_global, *mask_local;
} fn_ctx;

static mil_var *fp16_scalar(fn_ctx *f, const char *prefix, const char *what, double v) {
    char n[160];
    snprintf(n, sizeof n, "%s_%s", prefix, what);
    return mil_build_const_scalar(f->b, n, MIL_DT_FP16, v);
}

static mil_var *conv(fn_ctx *f, const char *name, mil_var *x, lower_weight *w) {
    char wn[160];
    snprintf(wn, sizeof wn, "%s_weight", name);
    mil_var *wv = x ? lower_shared_weight(f->b, wn, w) : NULL;
    return wv ? mil_build_conv(f->b, name, x, wv, NULL, 1) : NULL;
}

mil_var *mb_lower_layer_norm(mil_builder *b, const char *p, mil_var *x, int64_t D, double eps,
                             mil_var *wv, const char *out_name) {
    int32_t ax[1] = {1};
    char n[160], sn[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", p, s), n)
#define SC(s, v)                                                                                   \
    (snprintf(sn, sizeof sn, "%s_%s", p, s), mil_build_const_scalar(b, sn, MIL_DT_FP16, v))
    mil_var *ab = x && wv ? mil_build_unary(b, "abs", NM("abs"), x) : NULL;
    mil_var *mx = ab ? mil_build_reduce(b, "reduce_max", NM("absmax"), ab, 1, ax, 1) : NULL;
    /* the floor keeps all-zero padding columns finite; any a > 0 is exact */
    mil_var *a = mx ? mil_build_binary(b, "maximum", NM("a"), mx, SC("floor", 1.0 / 128)) : NULL;
    mil_var *xs = a ? mil_build_binary(b, "real_div", NM("xs"), x, a) : NULL;
    /* reduce_sum x 1/D: reduce_mean fails on some chips (docs/ane-rules.md) */
    mil_var *sm = xs ? mil_build_reduce(b, "reduce_sum", NM("sum"), xs, 1, ax, 1) : NULL;
    mil_var *mu = sm ? mil_build_mul(b, NM("mean"), sm, SC("inv_d", 1.0 / D)) : NULL;
    mil_var *xc = mu ? mil_build_binary(b, "sub", NM("centered"), xs, mu) : NULL;
    mil_var *sq = xc ? mil_build_mul(b, NM("sq"), xc, xc) : NULL;
    mil_var *ss = sq ? mil_build_reduce(b, "reduce_sum", NM("sumsq"), sq, 1, ax, 1) : NULL;
    mil_var *var = ss ? mil_build_mul(b, NM("var"), ss, SC("inv_d2", 1.0 / D)) : NULL;
    /* eps / a^2 as (sqrt(eps) / a)^2: no intermediate below fp16's range */
    mil_var *er =
        var ? mil_build_binary(b, "real_div", NM("eps_root"), SC("sqrt_eps", sqrt(eps)), a) : NULL;
    mil_var *es = er ? mil_build_mul(b, NM("eps_scaled"), er, er) : NULL;
    mil_var *den = es ? mil_build_add(b, NM("den"), var, es) : NULL;
    mil_var *r = den ? mil_build_rsqrt(b, NM("rsqrt"), den, 0.0) : NULL;
    mil_var *y = r ? mil_build_mul(b, NM("normed"), xc, r) : NULL;
    return y ? mil_build_mul(b, out_name ? out_name : NM("out"), y, wv) : NULL;
#undef SC
#undef NM
}

static mil_var *layer_norm(fn_ctx *f, const char *p, mil_var *x, lower_weight *w,
                           const char *out_name) {
    char wn[160];
    snprintf(wn, sizeof wn, "%s_weight", p);
    mil_var *wv = x ? lower_shared_weight(f->b, wn, w) : NULL;
    return mb_lower_layer_norm(f->b, p, x, f->c->hidden_size, f->c->norm_eps, wv, out_name);
}

mil_var *mb_lower_gelu_erf(mil_builder *b, const char *p, mil_var *x) {
    char n[160], sn[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", p, s), n)
#define SC(s, v)                                                                                   \
    (snprintf(sn, sizeof sn, "%s_%s", p, s), mil_build_const_scalar(b, sn, MIL_DT_FP16, v))
    mil_var *s = x ? mil_build_mul(b, NM("scaled"), x, SC("inv_sqrt2", M_SQRT1_2)) : NULL;
    mil_var *e = s ? mil_build_unary(b, "erf", NM("erf"), s) : NULL;
    mil_var *h = e ? mil_build_mul(b, NM("half_erf"), e, SC("half", 0.5)) : NULL;
    mil_var *g = h ? mil_build_add(b, NM("cdf"), h, SC("half2", 0.5)) : NULL;
    return g ? mil_build_mul(b, NM("gelu"), x, g) : NULL;
#undef SC
#undef NM
}

/* Exact GELU; the tanh form would change the function. */
static mil_var *gelu_exact(fn_ctx *f, const char *p, mil_var *x) {
    char n[160];
    snprintf(n, sizeof n, "%s_gelu", p);
    if (f->opt->gelu_op) return x ? mil_build_gelu(f->b, n, x, "EXACT") : NULL;
    return mb_lower_gelu_erf(f->b, p, x);
}

static mil_var *activation(fn_ctx *f, const char *p, mil_var *x) {
    char n[160];
    snprintf(n, sizeof n, "%s_act", p);
    switch (f->c->hidden_act) {
    case MODERNBERT_ACT_GELU:
        return gelu_exact(f, p, x);
    case MODERNBERT_ACT_GELU_TANH:
        return x ? mil_build_gelu(f->b, n, x, "TANH_APPROXIMATION") : NULL;
    case MODERNBERT_ACT_SILU:
        return x ? mil_build_unary(f->b, "silu", n, x) : NULL;
    case MODERNBERT_ACT_RELU:
        return x ? mil_build_unary(f->b, "relu", n, x) : NULL;
    }
    return NULL;
}

/* x [.., C, 1, L] rotated with cos/sin [1, C, 1, L]: x cos + (R x) sin, the
 * rotate-half R a constant 1x1 conv (exact +-1 weights, no slice/concat). */
static mil_var *rope(fn_ctx *f, const char *p, mil_var *x, lower_weight *rot, mil_var *cos,
                     mil_var *sin) {
    char n[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", p, s), n)
    mil_var *xr = conv(f, NM("rot"), x, rot);
    mil_var *xc = xr ? mil_build_mul(f->b, NM("cos"), x, cos) : NULL;
    mil_var *xs = xc ? mil_build_mul(f->b, NM("sin"), xr, sin) : NULL;
    return xs ? mil_build_add(f->b, NM("out"), xc, xs) : NULL;
#undef NM
}

/* cos/sin tables [1, C, 1, L] as transformers computes them (fp32 angles
 * p * theta^(-2i/hd), emb = cat(freqs, freqs) per head), rounded to fp16
 * once. C = hd per head; C = D repeats the head's table on every head (the
 * wrong-RoPE variant). Positions are 0..L-1: encoders see whole inputs. */
static nc_status rope_tables(fn_ctx *f, int which, int channels, mil_var **cos_out,
                             mil_var **sin_out, nc_error *err) {
    int hd = f->c->head_dim, L = f->L, half = hd / 2;
    double theta = which ? f->c->theta_local : f->c->theta_global;
    float *cv = malloc((size_t)channels * L * sizeof *cv),
          *sv = malloc((size_t)channels * L * sizeof *sv);
    if (!cv || !sv) {
        free(cv);
        free(sv);
        return nc_fail(err, NC_ERR_NOMEM, "RoPE tables: out of memory");
    }
    for (int ch = 0; ch < channels; ch++) {
        int i = (ch % hd) % half;
        float inv = (float)(1.0 / pow(theta, (double)(2 * i) / hd));
        for (int t = 0; t < L; t++) {
            float ang = (float)t * inv;
            cv[(size_t)ch * L + t] = (float)cos((double)ang);
            sv[(size_t)ch * L + t] = (float)sin((double)ang);
        }
    }
    int64_t dims[4] = {1, channels, 1, L};
    char n[64];
    snprintf(n, sizeof n, "rope_cos_%s", which ? "local" : "global");
    *cos_out = mil_build_const_fp16(f->b, n, 4, dims, cv);
    snprintf(n, sizeof n, "rope_sin_%s", which ? "local" : "global");
    *sin_out = *cos_out ? mil_build_const_fp16(f->b, n, 4, dims, sv) : NULL;
    free(cv);
    free(sv);
    return NC_OK;
}

mil_var *mb_lower_head_attention(mil_builder *b, const char *p, int B, int L, int hd,
                                 mil_var *q, mil_var *k, mil_var *v, mil_var *mask,
                                 int softmax_axis) {
    char n[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", p, s), n)
#define R4(name, x, d0, d1, d2, d3)                                                                \
    ((x) ? mil_build_reshape(b, name, x, 4, (const int32_t[]){d0, d1, d2, d3}) : NULL)
    /* K transposed to [B, L, 1, hd]; scores [b, key, 0, query] */
    int32_t perm[4] = {0, 3, 2, 1};
    mil_var *kt = k ? mil_build_transpose(b, NM("kt"), k, 4, perm) : NULL;
    mil_var *k2 = R4(NM("kt_mat"), kt, B, 1, L, hd);
    mil_var *q2 = k2 ? R4(NM("q_mat"), q, B, 1, hd, L) : NULL;
    mil_var *s2 = q2 ? mil_build_matmul(b, NM("scores_mat"), k2, q2, 0, 0) : NULL; /* [B,1,Lk,Lq] */
    mil_var *sc = R4(NM("scores"), s2, B, L, 1, L);
    mil_var *sm = sc ? mil_build_add(b, NM("scores_masked"), sc, mask) : NULL;
    /* softmax subtracts the max over the axis before exp (MIL definition) */
    mil_var *pr = sm ? mil_build_softmax(b, NM("probs"), sm, softmax_axis) : NULL;
    mil_var *p2 = R4(NM("probs_mat"), pr, B, 1, L, L);
    mil_var *v2 = p2 ? R4(NM("v_mat"), v, B, 1, hd, L) : NULL;
    mil_var *o2 = v2 ? mil_build_matmul(b, NM("out_mat"), v2, p2, 0, 0) : NULL; /* [B,1,hd,Lq] */
    return R4(NM("out"), o2, B, hd, 1, L);
#undef R4
#undef NM
}

/* One head of layer attention: the softmax over the KEY axis 1, where the
 * host's mask puts -1e4. */
static mil_var *head_attention(fn_ctx *f, const char *p, mil_var *q, mil_var *k, mil_var *v,
                               mil_var *mask) {
    return mb_lower_head_attention(f->b, p, f->B, f->L, f->c->head_dim, q, k, v, mask,
                                   f->opt->wrong_softmax_axis ? 3 : 1);
}

/* Attention block of layer l on normalised input a [B, D, 1, L]. */
static mil_var *attention(fn_ctx *f, int l, mil_var *a, mb_layer_weights *w,
                          mb_encoder_weights *ew) {
    mil_builder *b = f->b;
    const modernbert_config *c = f->c;
    int H = c->num_attention_heads, loc = !c->is_global[l];
    char p[32], n[160];
    snprintf(p, sizeof p, "l%02d", l);
#define NM(s) (snprintf(n, sizeof n, "%s_%s", p, s), n)
    /* fused QKV stays one conv; rows are Q | K | V, each head-major */
    mil_var *qkv = conv(f, NM("wqkv"), a, &w->wqkv);
    mil_var *qkvs[3];
    if (!qkv || mil_build_split(b, NM("qkv"), qkv, 1, 3, NULL, qkvs, 3) != 3) return NULL;
    mil_var *q = mil_build_mul(b, NM("q_scaled"), qkvs[0],
                               fp16_scalar(f, p, "scale", 1.0 / sqrt((double)c->head_dim)));
    mil_var *k = qkvs[1];
    mil_var *cos = f->cos[loc], *sin = f->sin[loc];
    if (q && f->opt->wrong_rope_across_heads) {
        /* WRONG on purpose: one rotate-half across all heads concatenated */
        q = rope(f, NM("q_rope_all"), q, &ew->rot_all, cos, sin);
        k = q ? rope(f, NM("k_rope_all"), k, &ew->rot_all, cos, sin) : NULL;
    }
    mil_var **qh = calloc((size_t)3 * H + H, sizeof *qh);
    if (!qh || !k) {
        free(qh);
        return NULL;
    }
    mil_var **kh = qh + H, **vh = kh + H, **oh = vh + H;
    mil_var *mask = loc && f->mask_local ? f->mask_local : f->mask_global;
    int ok = mil_build_split(b, NM("q_heads"), q, 1, H, NULL, qh, H) == H &&
             mil_build_split(b, NM("k_heads"), k, 1, H, NULL, kh, H) == H &&
             mil_build_split(b, NM("v_heads"), qkvs[2], 1, H, NULL, vh, H) == H;
    for (int h = 0; ok && h < H; h++) {
        char hp[48];
        snprintf(hp, sizeof hp, "%s_h%d", p, h);
        mil_var *qr = qh[h], *kr = kh[h];
        if (!f->opt->wrong_rope_across_heads) {
            /* rotate-half WITHIN the head, the layer type's theta */
            snprintf(n, sizeof n, "%s_q_rope", hp);
            qr = rope(f, n, qh[h], &ew->rot_head, cos, sin);
            snprintf(n, sizeof n, "%s_k_rope", hp);
            kr = qr ? rope(f, n, kh[h], &ew->rot_head, cos, sin) : NULL;
        }
        oh[h] = kr ? head_attention(f, hp, qr, kr, vh[h], mask) : NULL;
        ok = oh[h] != NULL;
    }
    mil_var *out = NULL;
    if (ok && f->opt->no_concat) {
        /* Wo x concat(heads) = sum over heads of Wo[:, head's columns] x head */
        for (int h = 0; ok && h < H; h++) {
            char hp[48];
            snprintf(hp, sizeof hp, "%s_h%d_wo", p, h);
            mil_var *part = conv(f, hp, oh[h], &w->wo_heads[h]);
            snprintf(hp, sizeof hp, h == H - 1 ? "%s_wo" : "%s_wo_sum%d", p, h);
            out = part && out ? mil_build_add(b, hp, out, part) : part;
            ok = out != NULL;
        }
    } else if (ok) {
        /* heads back on channels, head-major as Wo expects */
        mil_var *cat = H > 1 ? mil_build_concat(b, NM("heads"), oh, H, 1) : oh[0];
        out = conv(f, NM("wo"), cat, &w->wo);
    }
    free(qh);
    return out;
#undef NM
}

static mil_var *mlp(fn_ctx *f, int l, mil_var *m, mb_layer_weights *w) {
    char p[32], n[160];
    snprintf(p, sizeof p, "l%02d", l);
#define NM(s) (snprintf(n, sizeof n, "%s_%s", p, s), n)
    mil_var *hi = conv(f, NM("wi"), m, &w->wi);
    mil_var *parts[2];
    /* Wi rows: the first half is activated, the second half is the gate */
    if (!hi || mil_build_split(f->b, NM("wi_split"), hi, 1, 2, NULL, parts, 2) != 2) return NULL;
    mil_var *g = activation(f, NM("mlp"), parts[0]);
    mil_var *gg = g ? mil_build_mul(f->b, NM("gated"), g, parts[1]) : NULL;
    return conv(f, NM("wo_mlp"), gg, &w->wo_mlp);
#undef NM
}

static mil_var *input4(mil_builder *b, const char *name, int64_t d0, int64_t d1, int64_t d2,
                       int64_t d3) {
    int64_t dims[4] = {d0, d1, d2, d3};
    const mil_type *t = mil_type_tensor(mil_builder_program(b), MIL_DT_FP16, 4, dims);
    return t ? mil_build_input(b, name, t) : NULL;
}

static nc_status build_function(fn_ctx *f, mb_encoder_weights *w, nc_error *err) {
    mil_builder *b = f->b;
    const modernbert_config *c = f->c;
    int64_t D = c->hidden_size;
    mil_var *x = input4(b, "x", f->B, D, 1, f->L);
    f->mask_global = x ? input4(b, "mask_global", f->B, f->L, 1, f->L) : NULL;
    f->mask_local = NULL;
    if (f->mask_global && mb_lower_needs_local_mask(c, f->L))
        f->mask_local = input4(b, "mask_local", f->B, f->L, 1, f->L);
    if (f->mask_global && f->opt->append) /* its inputs, before any op */
        f->opt->append(f->opt->append_user, b, f->B, f->L, NULL, f->mask_global);
    int ch = f->opt->wrong_rope_across_heads ? (int)D : c->head_dim;
    for (int t = 0; t < 2 && f->mask_global; t++)
        NC_TRY(rope_tables(f, t, ch, &f->cos[t], &f->sin[t], err));
    mil_var *h = f->sin[1] ? x : NULL;
    for (int l = 0; l < c->num_hidden_layers && h; l++) {
        mb_layer_weights *lw = &w->layers[l];
        char p[32], n[48];
        snprintf(p, sizeof p, "l%02d_attn_norm", l);
        /* layer 0: attn_norm is nn.Identity in HF */
        mil_var *a = lw->attn_norm.data ? layer_norm(f, p, h, &lw->attn_norm, NULL) : h;
        mil_var *o = a ? attention(f, l, a, lw, w) : NULL;
        snprintf(n, sizeof n, "l%02d_attn_res", l);
        mil_var *h1 = o ? mil_build_add(b, n, h, o) : NULL;
        snprintf(p, sizeof p, "l%02d_mlp_norm", l);
        mil_var *m = h1 ? layer_norm(f, p, h1, &lw->mlp_norm, NULL) : NULL;
        mil_var *mo = m ? mlp(f, l, m, lw) : NULL;
        mb_lower_layer_var(n, sizeof n, l);
        h = mo ? mil_build_add(b, n, h1, mo) : NULL;
    }
    /* the output keeps a stable name for the host to bind */
    const char *name = f->opt->append ? "encoder_out" : "hidden";
    mil_var *out = h ? layer_norm(f, "final_norm", h, &w->final_norm, name) : NULL;
    if (out && f->opt->append)
        out = f->opt->append(f->opt->append_user, b, f->B, f->L, out, f->mask_global);
    if (out) mil_build_done(b, &out, 1);
    return NC_OK;
}

nc_status mb_lower_encoder_program(const modernbert_config *c, mb_encoder_weights *w,
                                   const int *batches, int n_batches, const int *seqs, int n_seqs,
                                   const mb_lower_options *opt, const char *dir, mil_program **out,
                                   nc_error *err) {
    if (c->head_dim % 2 || c->head_dim * c->num_attention_heads != c->hidden_size)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "modernbert: head_dim %d must be even and "
                       "heads x head_dim = hidden_size",
                       c->head_dim);
    mb_lower_options defaults = {0};
    mil_builder *b;
    NC_TRY(mil_builder_new(&b, dir, err));
    nc_status st = NC_OK;
    for (int i = 0; i < n_batches && !st; i++)
        for (int j = 0; j < n_seqs && !st; j++) {
            char fn[64];
            mb_lower_fn_name(fn, sizeof fn, batches[i], seqs[j]);
            fn_ctx f = {b, c, opt ? opt : &defaults, batches[i], seqs[j], {0}, {0}, NULL, NULL};
            if (mil_build_function(b, fn, "ios18") != NC_OK) break;
            st = build_function(&f, w, err);
        }
    if (!st && mil_builder_error(b)->code != NC_OK) {
        *err = *mil_builder_error(b);
        st = err->code;
    }
    if (st) {
        mil_builder_free(b);
        return st;
    }
    mil_program *prog = NULL;
    NC_TRY(mil_builder_finish(b, &prog, err));
    st = mil_check_strict(prog, 1, err);
    if (st != NC_OK) {
        mil_program_free(prog);
        return st;
    }
    *out = prog;
    return NC_OK;
}
