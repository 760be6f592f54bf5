/* The decision region in MIL (decision_lower.h): type addition and head
 * layers appended to the encoder's functions, each written as the CPU pass
 * of decision.c computes it (torch LayerNorm with bias, softmax attention
 * over the real keys, exact GELU, Linear = 1x1 conv with bias). */
#define _XOPEN_SOURCE 700
#include "decide/decision_lower.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "decide/decision_impl.h"
#include "bundle/bundle_io.h"
#include "lower/palettize.h"
#include "lower/weights_fp16.h"

enum { W_AN_W, W_AN_B, W_QKV_W, W_QKV_B, W_OUT_W, W_OUT_B, W_MN_W, W_MN_B, W_IN_W, W_IN_B,
       W_MO_W, W_MO_B, W_PER_LAYER };

typedef struct region {
    const decision_config *c;
    lower_weight type_t;  /* [D, K + 1, 1, 1]: the type table transposed */
    mil_var *types;       /* the current function's one-hot input */
    lower_weight *layers; /* W_PER_LAYER per head layer */
    int no_concat;        /* as mb_lower_options: the out projection per head, summed */
    lower_weight *wo_heads; /* no_concat: head h of layer i at [i * heads + h], [D, hd, 1, 1] */
    lower_weight *bo;       /* no_concat: layer i's out bias as [1, D, 1, 1] (added, not a conv's) */
    nc_fp16 *wo_blocks;     /* their data */
    lower_fp16_stats stats;
} region;

int decision_is_dir(const char *dir) {
    char path[4200];
    struct stat s;
    snprintf(path, sizeof path, "%s/decision.json", dir);
    return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

int decision_is_bundle(const char *bundle) {
    char path[4200];
    struct stat s;
    snprintf(path, sizeof path, "%s/%s", bundle, DECISION_PARTITION_FILE);
    return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

/* Linear = 1x1 conv with bias: w [out, in, 1, 1], b [out]. */
static mil_var *linear(mil_builder *b, const char *name, mil_var *x, lower_weight *w,
                       lower_weight *bias) {
    char n[160];
    snprintf(n, sizeof n, "%s_weight", name);
    mil_var *wv = x ? lower_shared_weight(b, n, w) : NULL;
    snprintf(n, sizeof n, "%s_bias", name);
    mil_var *bv = wv ? lower_shared_weight(b, n, bias) : NULL;
    return bv ? mil_build_conv(b, name, x, wv, bv, 1) : NULL;
}

/* torch LayerNorm over channels: mb_lower_layer_norm's fp16-safe form,
 * plus the bias. */
static mil_var *layer_norm(mil_builder *b, const region *r, const char *p, mil_var *x,
                           lower_weight *w, lower_weight *bias, const char *out_name) {
    char n[160];
    snprintf(n, sizeof n, "%s_weight", p);
    mil_var *wv = x ? lower_shared_weight(b, n, w) : NULL;
    mil_var *y = wv ? mb_lower_layer_norm(b, p, x, r->c->hidden_size, r->c->head_norm_eps, wv,
                                          NULL)
                    : NULL;
    snprintf(n, sizeof n, "%s_bias", p);
    mil_var *bv = y ? lower_shared_weight(b, n, bias) : NULL;
    snprintf(n, sizeof n, "%s_out_b", p);
    return bv ? mil_build_add(b, out_name ? out_name : n, y, bv) : NULL;
}

/* Multi-head self-attention over the real keys (mask [b, key, 0, query]). */
static mil_var *attention(mil_builder *b, const region *r, const char *p, int B, int L,
                          mil_var *a, lower_weight *w, lower_weight *wo_heads, lower_weight *bo,
                          mil_var *mask) {
    const decision_config *c = r->c;
    int H = c->head_heads, hd = c->hidden_size / H;
    char n[160];
#define NM(s) (snprintf(n, sizeof n, "%s_%s", p, s), n)
    mil_var *qkv = linear(b, NM("qkv"), a, &w[W_QKV_W], &w[W_QKV_B]);
    mil_var *parts[3];
    if (!qkv || mil_build_split(b, NM("qkv_split"), qkv, 1, 3, NULL, parts, 3) != 3) return NULL;
    mil_var *sc = mil_build_const_scalar(b, NM("scale"), MIL_DT_FP16, 1.0 / sqrt((double)hd));
    mil_var *q = mil_build_mul(b, NM("q_scaled"), parts[0], sc);
    mil_var **heads = calloc((size_t)4 * H, sizeof *heads);
    if (!heads || !q) {
        free(heads);
        return NULL;
    }
    mil_var **qh = heads, **kh = qh + H, **vh = kh + H, **oh = vh + H;
    int ok = mil_build_split(b, NM("q_heads"), q, 1, H, NULL, qh, H) == H &&
             mil_build_split(b, NM("k_heads"), parts[1], 1, H, NULL, kh, H) == H &&
             mil_build_split(b, NM("v_heads"), parts[2], 1, H, NULL, vh, H) == H;
    for (int h = 0; ok && h < H; h++) {
        char hp[64];
        snprintf(hp, sizeof hp, "%s_h%d", p, h);
        oh[h] = mb_lower_head_attention(b, hp, B, L, hd, qh[h], kh[h], vh[h], mask, 1);
        ok = oh[h] != NULL;
    }
    mil_var *out = NULL;
    if (ok && r->no_concat) {
        /* Wo x concat(heads) + b = sum over heads of Wo[:, head's columns] x head, + b
         * (no `concat`: ane-concat) */
        for (int h = 0; ok && h < H; h++) {
            char hp[96], wn[112];
            snprintf(hp, sizeof hp, "%s_h%d_wo", p, h);
            snprintf(wn, sizeof wn, "%s_weight", hp);
            mil_var *wv = lower_shared_weight(b, wn, &wo_heads[h]);
            mil_var *part = wv ? mil_build_conv(b, hp, oh[h], wv, NULL, 1) : NULL;
            snprintf(hp, sizeof hp, "%s_wo_sum%d", p, h);
            out = part && out ? mil_build_add(b, hp, out, part) : part;
            ok = out != NULL;
        }
        mil_var *bv = ok ? lower_shared_weight(b, NM("out_bias"), bo) : NULL;
        out = bv ? mil_build_add(b, NM("out"), out, bv) : NULL;
    } else if (ok) {
        mil_var *cat = H > 1 ? mil_build_concat(b, NM("heads"), oh, H, 1) : oh[0];
        out = linear(b, NM("out"), cat, &w[W_OUT_W], &w[W_OUT_B]);
    }
    free(heads);
    return out;
#undef NM
}

/* Head layer i on x [B, D, 1, L], pre- or post-norm as decision.c; the
 * result is named out_name (NULL: an internal name). */
static mil_var *head_layer(mil_builder *b, const region *r, int i, int B, int L, mil_var *x,
                           mil_var *mask, const char *out_name) {
    lower_weight *w = r->layers + (size_t)i * W_PER_LAYER;
    int pre = r->c->head_pre_norm;
    char p[32], n[160];
    snprintf(p, sizeof p, "hd%02d", i);
#define NM(s) (snprintf(n, sizeof n, "%s_%s", p, s), n)
    mil_var *a = pre ? layer_norm(b, r, NM("attn_norm"), x, &w[W_AN_W], &w[W_AN_B], NULL) : x;
    lower_weight *woh = r->wo_heads ? r->wo_heads + (size_t)i * r->c->head_heads : NULL;
    lower_weight *bo = r->bo ? &r->bo[i] : NULL;
    mil_var *o = a ? attention(b, r, NM("attn"), B, L, a, w, woh, bo, mask) : NULL;
    mil_var *h = o ? mil_build_add(b, NM("attn_res"), x, o) : NULL;
    if (!pre) h = layer_norm(b, r, NM("attn_norm"), h, &w[W_AN_W], &w[W_AN_B], NULL);
    mil_var *m = pre ? layer_norm(b, r, NM("mlp_norm"), h, &w[W_MN_W], &w[W_MN_B], NULL) : h;
    mil_var *mi = m ? linear(b, NM("mlp_in"), m, &w[W_IN_W], &w[W_IN_B]) : NULL;
    mil_var *g = mi ? mb_lower_gelu_erf(b, NM("mlp"), mi) : NULL;
    mil_var *mo = g ? linear(b, NM("mlp_out"), g, &w[W_MO_W], &w[W_MO_B]) : NULL;
    if (pre) return mo ? mil_build_add(b, out_name ? out_name : NM("out"), h, mo) : NULL;
    mil_var *h2 = mo ? mil_build_add(b, NM("mlp_res"), h, mo) : NULL;
    char on[64];
    snprintf(on, sizeof on, "%s_out", p); /* as pre-norm: the parity gate reads it */
    return layer_norm(b, r, NM("mlp_norm"), h2, &w[W_MN_W], &w[W_MN_B], out_name ? out_name : on);
#undef NM
}

/* The append hook of mb_lower_options: type addition, then the head. */
static mil_var *append_region(void *user, mil_builder *b, int B, int L, mil_var *hidden,
                              mil_var *mask) {
    region *r = user;
    const decision_config *c = r->c;
    int H = c->head_layers;
    if (!hidden) { /* first call: the one-hot input */
        int64_t dims[4] = {B, c->type_vocab_size, 1, L};
        const mil_type *t = mil_type_tensor(mil_builder_program(b), MIL_DT_FP16, 4, dims);
        r->types = t ? mil_build_input(b, "types", t) : NULL;
        return r->types;
    }
    mil_var *types = r->types;
    mil_var *tw = types ? lower_shared_weight(b, "type_table", &r->type_t) : NULL;
    mil_var *te = tw ? mil_build_conv(b, "type_emb", types, tw, NULL, 1) : NULL;
    mil_var *x = te ? mil_build_add(b, H ? "typed" : "hidden", hidden, te) : NULL;
    for (int i = 0; i < H && x; i++)
        x = head_layer(b, r, i, B, L, x, mask, i == H - 1 ? "hidden" : NULL);
    return x;
}

static void vec_shape(lower_weight *w, int64_t n, int as_channels) {
    if (as_channels) {
        lower_weight_shape4(w, 1, n, 1, 1);
        return;
    }
    w->rank = 1;
    w->dims[0] = n;
}

/* no_concat: each layer's out projection [D, D] cut by input columns into
 * one [D, hd, 1, 1] block per head. */
static nc_status split_out_heads(region *r, nc_error *err) {
    const decision_config *c = r->c;
    int64_t D = c->hidden_size, NH = c->head_heads, hd = D / NH, HL = c->head_layers;
    if (!HL) return NC_OK;
    r->wo_heads = calloc((size_t)(HL * NH), sizeof *r->wo_heads);
    r->wo_blocks = malloc((size_t)(HL * D * D) * sizeof *r->wo_blocks);
    r->bo = calloc((size_t)HL, sizeof *r->bo);
    if (!r->wo_heads || !r->wo_blocks || !r->bo) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < HL; i++) {
        r->bo[i].data = r->layers[(size_t)i * W_PER_LAYER + W_OUT_B].data;
        lower_weight_shape4(&r->bo[i], 1, D, 1, 1);
        const nc_fp16 *wo = r->layers[(size_t)i * W_PER_LAYER + W_OUT_W].data;
        for (int64_t h = 0; h < NH; h++) {
            nc_fp16 *dst = r->wo_blocks + (i * NH + h) * D * hd;
            for (int64_t o = 0; o < D; o++)
                for (int64_t j = 0; j < hd; j++)
                    dst[o * hd + j] = wo[o * D + h * hd + j];
            lower_weight *w = &r->wo_heads[i * NH + h];
            w->data = dst;
            lower_weight_shape4(w, D, hd, 1, 1);
        }
    }
    return NC_OK;
}

/* Every head tensor of decision.safetensors in fp16, shaped for the MIL. */
static nc_status load_region(decision_model *m, const char *dir, const lower_palette_options *pal,
                             lower_palette_stats *pal_stats, region *r, nc_error *err) {
    const decision_config *c = &m->cfg;
    int64_t D = c->hidden_size, I = c->head_intermediate, T = c->type_vocab_size;
    char path[4200];
    snprintf(path, sizeof path, "%s/decision.safetensors", dir);
    lower_weight tt = {0};
    NC_TRY(lower_tensor_load_fp16(&m->head_file, m->pool, path, "type_embeddings", T, D,
                                  &r->stats, &tt, err));
    nc_fp16 *tr = malloc((size_t)(T * D) * sizeof *tr);
    if (tr)
        for (int64_t i = 0; i < T; i++)
            for (int64_t d = 0; d < D; d++)
                tr[d * T + i] = tt.data[i * D + d];
    free((void *)tt.data);
    if (!tr) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    r->type_t.data = tr;
    lower_weight_shape4(&r->type_t, D, T, 1, 1);
    r->layers = calloc((size_t)(c->head_layers ? c->head_layers : 1) * W_PER_LAYER,
                       sizeof *r->layers);
    if (!r->layers) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    static const char *const names[W_PER_LAYER] = {
        "attn_norm.weight", "attn_norm.bias", "qkv.weight",      "qkv.bias",
        "out.weight",       "out.bias",       "mlp_norm.weight", "mlp_norm.bias",
        "mlp_in.weight",    "mlp_in.bias",    "mlp_out.weight",  "mlp_out.bias"};
    const int64_t rows[W_PER_LAYER] = {D, D, 3 * D, 3 * D, D, D, D, D, I, I, D, D};
    const int64_t cols[W_PER_LAYER] = {0, 0, D, 0, D, 0, 0, 0, D, 0, I, 0};
    for (int i = 0; i < c->head_layers; i++)
        for (int k = 0; k < W_PER_LAYER; k++) {
            lower_weight *w = &r->layers[(size_t)i * W_PER_LAYER + k];
            char name[96];
            snprintf(name, sizeof name, "head.%d.%s", i, names[k]);
            NC_TRY(lower_tensor_load_fp16(&m->head_file, m->pool, path, name, rows[k], cols[k],
                                          &r->stats, w, err));
            if (cols[k]) lower_weight_shape4(w, rows[k], cols[k], 1, 1);
            else vec_shape(w, rows[k], k == W_AN_W || k == W_AN_B || k == W_MN_W || k == W_MN_B);
            /* --palettize: the head's projections as the encoder's (norms,
             * biases, the type table and the CPU tail stay fp16/fp32) */
            if (pal->bits && cols[k])
                NC_TRY(lower_palettize(m->pool, w, pal, name, pal_stats, err));
        }
    return r->no_concat ? split_out_heads(r, err) : NC_OK;
}

static void free_region(region *r) {
    free(r->wo_heads);
    free(r->wo_blocks);
    free(r->bo);
    free((void *)r->type_t.data);
    for (int i = 0; r->layers && i < r->c->head_layers * W_PER_LAYER; i++) {
        free((void *)r->layers[i].data);
        free(r->layers[i].pal);
    }
    free(r->layers);
}

static json_t *names(const char *const *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* Which parts run where, and the bytes crossing engines per call of each
 * compiled (batch, sequence) function, at fp16. */
static json_t *partition_json(const mb_compile_options *o, const decision_model *m) {
    const decision_config *c = &m->cfg;
    const modernbert_config *e = modernbert_model_config(m->enc);
    static const char *const before[] = {"tokenizer", "token_embeddings", "embedding_norm"};
    static const char *const region[] = {"encoder_layers", "final_norm", "type_embedding_add",
                                         "head_layers"};
    static const char *const inputs[] = {"x", "mask_global", "types"};
    static const char *const after[] = {"marker_selection", "scorer", "marker_probs",
                                        "calibrated_probs", "action_head"};
    char text[512];
    snprintf(text, sizeof text,
             "CPU: tokenizer, token embeddings, embedding LayerNorm; NE: %d encoder layers + "
             "final norm + type addition + %d head layers; CPU: marker selection, scorer, raw "
             "and calibrated probabilities, action head",
             e->num_hidden_layers, c->head_layers);
    json_t *ne = json_pack("{s:s, s:o, s:i, s:i, s:o, s:s}", "program", "encoder/model.mil",
                           "parts", names(region, 4), "encoder_layers", e->num_hidden_layers,
                           "head_layers", c->head_layers, "inputs", names(inputs, 3), "output",
                           "hidden");
    json_t *cross = json_array();
    for (int b = 0; b < o->n_batches; b++)
        for (int l = 0; l < o->n_seqs; l++) {
            long long B = o->batches[b], L = o->seqs[l], D = c->hidden_size;
            json_array_append_new(
                cross, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "batch", B, "seq", L,
                                 "embeddings_bytes", 2 * B * L * D, "mask_bytes", 2 * B * L * L,
                                 "types_bytes", 2 * B * c->type_vocab_size * L, "hidden_bytes",
                                 2 * B * L * D));
        }
    return json_pack("{s:s, s:i, s:s, s:o, s:o, s:o, s:i, s:o}", "format",
                     "nectar-decision-partition", "version", 1, "summary", text, "cpu_before",
                     names(before, 3), "ne_region", ne, "cpu_after", names(after, 5),
                     "num_markers", c->num_markers, "crossings_per_call", cross);
}

/* BUNDLE/partition.json, and the same object as manifest.json's
 * "partition" (so the manifest says which parts run where). */
static nc_status write_partition(const mb_compile_options *o, const decision_model *m,
                                 const char *dir, nc_error *err) {
    char path[4300];
    json_t *part = partition_json(o, m), *man = NULL;
    if (!part) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    snprintf(path, sizeof path, "%s/%s", dir, DECISION_PARTITION_FILE);
    nc_status st = nc_json_save(json_incref(part), path, 2, err); /* save takes a reference */
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (st == NC_OK) st = nc_json_load_file(path, &man, err);
    if (st == NC_OK && json_object_set(man, "partition", part)) {
        json_decref(man);
        st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    } else if (st == NC_OK) {
        st = nc_json_save(man, path, 2, err);
    }
    json_decref(part);
    return st;
}

nc_status decision_compile(mb_compile_options *o, mb_compile_report *rep, nc_error *err) {
    decision_model *m = NULL;
    NC_TRY(decision_load(o->model_dir, o->n_threads, &m, err));
    region r = {.c = &m->cfg, .no_concat = o->lower.no_concat};
    lower_palette_stats head_pal;
    memset(&head_pal, 0, sizeof head_pal);
    nc_status st = load_region(m, o->model_dir, &o->palettize, &head_pal, &r, err);
    o->lower.append = append_region;
    o->lower.append_user = &r;
    if (!st) st = lower_modernbert_compile(o, rep, err);
    /* the bundle is whole by now; a partition file that cannot be written
     * takes the bundle with it (no half-made output) */
    if (!st && (st = write_partition(o, m, o->out_dir, err)) != NC_OK)
        lower_remove_tree(o->out_dir);
    if (!st) {
        rep->fp16.n_values += r.stats.n_values;
        rep->fp16.n_saturated += r.stats.n_saturated;
        rep->fp16.n_nonfinite += r.stats.n_nonfinite;
        rep->crossings_per_call += 1; /* the one-hot type input */
        /* the compile report counts the encoder's palettized tensors; add the head's */
        rep->palettize.n_weights += head_pal.n_weights;
        rep->palettize.n_tensors += head_pal.n_tensors;
        rep->palettize.dense_bytes += head_pal.dense_bytes;
        rep->palettize.stored_bytes += head_pal.stored_bytes;
        rep->palettize.sum_sq_err += head_pal.sum_sq_err;
        rep->palettize.sum_sq += head_pal.sum_sq;
    }
    o->lower.append = NULL;
    o->lower.append_user = NULL;
    free_region(&r);
    decision_free(m);
    return st;
}
