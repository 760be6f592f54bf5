/* Qwen3.5 layers to programs (qwen35_compile.h): read each tensor, reshape
 * it into the layout the programs want (q_proj split, value heads padded to
 * a multiple of 32, norms as 1 + w, the conv weight per window column), in
 * fp16, and build the layer's program. */
#include "lower/qwen35_compile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lower_qwen35_prefix(const qwen35_config *c) {
    return c->is_vl ? "model.language_model." : "model.";
}

static nc_status load(const lower_q35_src *s, const char *name, int64_t d0, int64_t d1,
                      lower_weight *w, nc_error *err) {
    return lower_tensor_load_fp16(s->w, s->pool, s->model_dir, name, d0, d1, s->stats, w, err);
}

/* --palettize: a projection (already padded) to indices and tables. A
 * padded one pins an exact 0.0 entry in each group holding zeros, so its
 * padded rows and columns expand to exactly 0 (docs/palettization.md). */
static nc_status palettize(const lower_q35_src *s, lower_weight *w, const char *name, int padded,
                           nc_error *err) {
    if (!s->pal || !s->pal->bits) return NC_OK;
    lower_palette_options o = *s->pal;
    o.zero_entry = padded;
    return lower_palettize(s->pool, w, &o, name, s->pal_stats, err);
}

/* The exact values of a 1-D tensor of n entries as fp32 (malloc'd). */
static nc_status load_f32(const lower_q35_src *s, const char *name, int64_t n, float **out,
                          nc_error *err) {
    const st_tensor *t;
    NC_TRY(lower_tensor_find(s->w, s->model_dir, name, n, 0, &t, err));
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return nc_fail(err, NC_ERR_NOMEM, "tensor %s: out of memory", name);
    for (int64_t i = 0; i < n; i++)
        v[i] = lower_tensor_f32_at(t, (size_t)i);
    *out = v;
    return NC_OK;
}

/* fp32 values into a new fp16 buffer held by w (counted like the weights). */
static nc_status to_weight(const lower_q35_src *s, float *v, size_t n, lower_weight *w,
                           nc_error *err) {
    nc_fp16 *h = malloc(n * sizeof *h);
    if (!h) {
        free(v);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (fabsf(v[i]) > 65504.0f && isfinite(v[i])) s->stats->n_saturated++;
        h[i] = nc_f32_to_fp16(v[i] > 65504.0f ? 65504.0f : v[i] < -65504.0f ? -65504.0f : v[i]);
    }
    s->stats->n_values += n;
    free(v);
    w->data = h;
    w->val = NULL;
    return NC_OK;
}

nc_status lower_qwen35_norm1p(const lower_q35_src *s, const char *name, int64_t n,
                              lower_weight *out, nc_error *err) {
    float *v;
    NC_TRY(load_f32(s, name, n, &v, err));
    for (int64_t i = 0; i < n; i++)
        v[i] += 1.0f;
    return to_weight(s, v, (size_t)n, out, err);
}

/* Channel i of the checkpoint's layout -> its padded channel: the first
 * `keys` channels (q and k heads) spread from groups of dk to groups of
 * dkp, the rest (value heads) from groups of dv to groups of dvp. */
typedef struct head_pad {
    int64_t keys, dk, dkp, dv, dvp;
} head_pad;

static int64_t padded_channel(const head_pad *h, int64_t i) {
    return i < h->keys ? i / h->dk * h->dkp + i % h->dk
                       : h->keys / h->dk * h->dkp + (i - h->keys) / h->dv * h->dvp +
                             (i - h->keys) % h->dv;
}

/* Row r of a [rows, cols] fp16 matrix to row padded_channel(r) of a new
 * [rows_out, cols] one (zeros elsewhere); by_cols: the same for columns. */
static nc_status pad_heads(lower_weight *w, int64_t rows, int64_t cols, int by_cols,
                           const head_pad *h, nc_error *err) {
    int64_t n_in = by_cols ? cols : rows;
    int64_t n_out = h->keys / h->dk * h->dkp + (n_in - h->keys) / h->dv * h->dvp;
    int64_t ro = by_cols ? rows : n_out, co = by_cols ? n_out : cols;
    nc_fp16 *d = calloc((size_t)(ro * co), sizeof *d);
    if (!d) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t i = by_cols ? c : r;
            int64_t m = padded_channel(h, i);
            int64_t rr = by_cols ? r : m, cc = by_cols ? m : c;
            d[rr * co + cc] = w->data[r * cols + c];
        }
    free((void *)w->data);
    w->data = d;
    return NC_OK;
}

/* q_proj [H * 2 hd, D] -> the query rows into w->q, the gate rows into w->out_gate. */
static nc_status split_q(lower_layer_weights *w, const lower_weight *qg, int H, int hd, int64_t D,
                         nc_error *err) {
    size_t half = (size_t)H * hd * D;
    nc_fp16 *q = malloc(half * sizeof *q), *g = malloc(half * sizeof *g);
    if (!q || !g) {
        free(q);
        free(g);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    size_t row = (size_t)hd * D;
    for (int h = 0; h < H; h++) {
        memcpy(q + h * row, qg->data + (size_t)2 * h * row, row * sizeof *q);
        memcpy(g + h * row, qg->data + (size_t)(2 * h + 1) * row, row * sizeof *g);
    }
    w->q.data = q;
    w->out_gate.data = g;
    return NC_OK;
}

/* The MLP weights and the post-attention norm every layer has. */
static nc_status load_mlp(const lower_q35_src *s, const char *pre, lower_layer_weights *w,
                          nc_error *err) {
    const qwen35_config *c = s->cfg;
    int64_t D = c->hidden_size, I = c->intermediate_size;
    char n[256];
#define NAME(x) (snprintf(n, sizeof n, "%s%s", pre, x), n)
    NC_TRY(load(s, NAME("mlp.gate_proj.weight"), I, D, &w->gate, err));
    NC_TRY(load(s, NAME("mlp.up_proj.weight"), I, D, &w->up, err));
    NC_TRY(load(s, NAME("mlp.down_proj.weight"), D, I, &w->down, err));
    NC_TRY(palettize(s, &w->gate, NAME("mlp.gate_proj.weight"), 0, err));
    NC_TRY(palettize(s, &w->up, NAME("mlp.up_proj.weight"), 0, err));
    NC_TRY(palettize(s, &w->down, NAME("mlp.down_proj.weight"), 0, err));
    return lower_qwen35_norm1p(s, NAME("post_attention_layernorm.weight"), D, &w->mlp_norm, err);
#undef NAME
}

static nc_status full_layer(const lower_q35_src *s, const lower_plan *p, const char *pre,
                            lower_weight *rope, const char *dir, mil_program **out, nc_error *err) {
    const qwen35_config *c = s->cfg;
    int64_t D = c->hidden_size, hd = c->head_dim, qd = (int64_t)c->num_attention_heads * hd;
    int64_t kvd = (int64_t)c->num_key_value_heads * hd;
    lower_layer_weights w;
    memset(&w, 0, sizeof w);
    lower_qwen3_layer_shapes(p->cfg, &w);
    lower_weight qg = {0};
    char n[256];
#define NAME(x) (snprintf(n, sizeof n, "%s%s", pre, x), n)
    nc_status st = load(s, NAME("self_attn.q_proj.weight"), 2 * qd, D, &qg, err);
    if (!st) st = split_q(&w, &qg, c->num_attention_heads, c->head_dim, D, err);
    if (!st) st = load(s, NAME("self_attn.k_proj.weight"), kvd, D, &w.k, err);
    if (!st) st = load(s, NAME("self_attn.v_proj.weight"), kvd, D, &w.v, err);
    if (!st) st = load(s, NAME("self_attn.o_proj.weight"), D, qd, &w.o, err);
    if (!st) st = lower_qwen35_norm1p(s, NAME("input_layernorm.weight"), D, &w.attn_norm, err);
    if (!st) st = lower_qwen35_norm1p(s, NAME("self_attn.q_norm.weight"), hd, &w.q_norm, err);
    if (!st) st = lower_qwen35_norm1p(s, NAME("self_attn.k_norm.weight"), hd, &w.k_norm, err);
    /* q_proj's two halves (query, output gate) each get their own tables */
    lower_weight *proj[] = {&w.q, &w.out_gate, &w.k, &w.v, &w.o};
    static const char *const src[] = {"q_proj", "q_proj", "k_proj", "v_proj", "o_proj"};
    for (size_t i = 0; i < sizeof proj / sizeof proj[0] && !st; i++) {
        snprintf(n, sizeof n, "%sself_attn.%s.weight", pre, src[i]);
        st = palettize(s, proj[i], n, 0, err);
    }
#undef NAME
    if (!st) st = load_mlp(s, pre, &w, err);
    if (!st) st = lower_qwen3_layer_program(p, &w, rope, dir, out, err);
    free((void *)qg.data);
    lower_weight *all[] = {&w.q,    &w.k,         &w.v,        &w.o,      &w.gate,   &w.up,
                           &w.down, &w.attn_norm, &w.mlp_norm, &w.q_norm, &w.k_norm, &w.out_gate};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free((void *)all[i]->data);
        free(all[i]->pal);
    }
    return st;
}

/* conv1d.weight [C0, 1, K] -> conv_prev [C, 32] (column k: weight k, k < K-1)
 * and conv_last [C] (weight K-1), value channels padded. */
static nc_status load_conv(const lower_q35_src *s, const char *name, lower_linear_weights *w,
                           const head_pad *h, nc_error *err) {
    const qwen35_config *c = s->cfg;
    int64_t K = c->linear_conv_kernel_dim, fixed = h->keys;
    int64_t C0 = fixed + (int64_t)c->linear_num_value_heads * c->linear_value_head_dim;
    int64_t C = lower_qwen35_conv_channels_padded(c, w->dkp), W = LOWER_STEP_SEQ;
    const st_tensor *t = hf_weights_find(s->w, name, NULL);
    if (!t) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: tensor %s is missing", s->model_dir, name);
    if (t->ndim != 3 || t->shape[0] != C0 || t->shape[1] != 1 || t->shape[2] != K)
        return nc_fail(err, NC_ERR_FORMAT,
                       "tensor %s: shape does not match config.json (expected [%lld, 1, %lld])",
                       name, (long long)C0, (long long)K);
    float *prev = calloc((size_t)(C * W), sizeof *prev), *last = calloc((size_t)C, sizeof *last);
    if (!prev || !last) {
        free(prev);
        free(last);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    for (int64_t ch = 0; ch < C0; ch++) {
        int64_t m = padded_channel(h, ch);
        for (int64_t k = 0; k < K; k++) {
            float v = lower_tensor_f32_at(t, (size_t)(ch * K + k));
            if (k < K - 1)
                prev[m * W + k] = v;
            else
                last[m] = v;
        }
    }
    nc_status st = to_weight(s, prev, (size_t)(C * W), &w->conv_prev, err);
    if (st) {
        free(last);
        return st;
    }
    return to_weight(s, last, (size_t)C, &w->conv_last, err);
}

static nc_status linear_layer(const lower_q35_src *s, const lower_plan *p, const char *pre,
                              const char *dir, mil_program **out, nc_error *err) {
    const qwen35_config *c = s->cfg;
    int64_t D = c->hidden_size, nv = c->linear_num_value_heads, dv = c->linear_value_head_dim;
    int64_t dvp = lower_qwen35_dvp(c);
    int64_t fixed = 2 * (int64_t)c->linear_num_key_heads * c->linear_key_head_dim;
    lower_linear_weights w;
    lower_layer_weights mlp;
    memset(&w, 0, sizeof w);
    memset(&mlp, 0, sizeof mlp);
    w.dkp = lower_matmul_padded(c->linear_key_head_dim, p->forms.matmul_pad);
    w.exp = p->forms.exp;
    head_pad kp = {fixed, c->linear_key_head_dim, w.dkp, dv, dvp}; /* in_proj_qkv, conv */
    head_pad vp = {0, 1, 1, dv, dvp};                             /* in_proj_z, out_proj */
    lower_qwen35_linear_shapes(c, &w);
    lower_qwen3_layer_shapes(p->cfg, &mlp);
    float *v = NULL;
    char n[256];
#define NAME(x) (snprintf(n, sizeof n, "%slinear_attn.%s", pre, x), n)
    nc_status st = lower_qwen35_conv_constants(c, &w, err);
    if (!st) st = load(s, NAME("in_proj_qkv.weight"), fixed + nv * dv, D, &w.qkv, err);
    if (!st) st = pad_heads(&w.qkv, fixed + nv * dv, D, 0, &kp, err);
    if (!st) st = load(s, NAME("in_proj_z.weight"), nv * dv, D, &w.z, err);
    if (!st) st = pad_heads(&w.z, nv * dv, D, 0, &vp, err);
    if (!st) st = load(s, NAME("in_proj_b.weight"), nv, D, &w.b, err);
    if (!st) st = load(s, NAME("in_proj_a.weight"), nv, D, &w.a, err);
    if (!st) st = load(s, NAME("out_proj.weight"), D, nv * dv, &w.out, err);
    if (!st) st = pad_heads(&w.out, D, nv * dv, 1, &vp, err);
    /* in_proj_b and in_proj_a ([nv, D], a few KB) stay fp16: they set the
     * delta rule's write strength and decay, which compound over tokens */
    if (!st)
        st = palettize(s, &w.qkv, NAME("in_proj_qkv.weight"), dvp != dv || w.dkp != kp.dk, err);
    if (!st) st = palettize(s, &w.z, NAME("in_proj_z.weight"), dvp != dv, err);
    if (!st) st = palettize(s, &w.out, NAME("out_proj.weight"), dvp != dv, err);
    if (!st) st = load(s, NAME("dt_bias"), nv, 0, &w.dt_bias, err);
    if (!st) st = load_f32(s, NAME("A_log"), nv, &v, err);
    if (!st) {
        for (int64_t h = 0; h < nv; h++)
            v[h] = -expf(v[h]); /* as the CPU loader: the decay rate in fp32, then fp16 */
        st = to_weight(s, v, (size_t)nv, &w.neg_a, err);
    }
    if (!st) st = load_f32(s, NAME("norm.weight"), dv, &v, err);
    if (!st) {
        float *g = calloc((size_t)dvp, sizeof *g);
        if (g) memcpy(g, v, (size_t)dv * sizeof *g);
        free(v);
        st = g ? to_weight(s, g, (size_t)dvp, &w.gnorm, err) : nc_fail(err, NC_ERR_NOMEM, "oom");
    }
    if (!st) st = load_conv(s, NAME("conv1d.weight"), &w, &kp, err);
#undef NAME
    snprintf(n, sizeof n, "%sinput_layernorm.weight", pre);
    if (!st) st = lower_qwen35_norm1p(s, n, D, &w.attn_norm, err);
    if (!st) st = load_mlp(s, pre, &mlp, err);
    if (!st) st = lower_qwen35_linear_program(p, c, &w, &mlp, s->prefill_form, dir, out, err);
    lower_weight *all[] = {&w.attn_norm, &w.qkv,       &w.z,     &w.b,       &w.a,
                           &w.conv_prev, &w.conv_last, &w.neg_a, &w.dt_bias, &w.gnorm,
                           &w.out,       &w.shift,     &w.place, &mlp.gate,  &mlp.up,
                           &mlp.down,    &mlp.mlp_norm};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free((void *)all[i]->data);
        free(all[i]->pal);
    }
    return st;
}

nc_status lower_qwen35_layer_program(const lower_q35_src *s, const lower_plan *p, int l,
                                     lower_weight *rope, const char *dir, mil_program **out,
                                     nc_error *err) {
    char pre[96];
    snprintf(pre, sizeof pre, "%slayers.%d.", lower_qwen35_prefix(s->cfg), l);
    if (s->cfg->is_full[l]) return full_layer(s, p, pre, rope, dir, out, err);
    char probe[160];
    snprintf(probe, sizeof probe, "%slinear_attn.in_proj_qkv.weight", pre);
    if (!hf_weights_find(s->w, probe, NULL))
        return nc_fail(err, NC_ERR_NOT_FOUND,
                       "%s: layer %d is a linear-attention layer (layer_types) but tensor '%s' is "
                       "missing: not a complete Qwen3.5 checkpoint",
                       s->model_dir, l, probe);
    return linear_layer(s, p, pre, dir, out, err);
}

int lower_qwen35_layer_kernels(const qwen35_config *c, int l, int kernels_per_layer) {
    return c->is_full[l] ? kernels_per_layer : 2;
}
