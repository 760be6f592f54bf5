/* The ane engine's refused layers on the CPU decoder (bundle_cpu_layer.h). */
#include "engine/bundle_cpu_layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "base/log.h"
#include "lower/qwen3_lower.h"
#include "mil/parse.h"

/* A layer's tensors read back from its programs' weight.bin. */
struct bundle_weights {
    const lower_manifest *man;
    char dir[4096];
    mil_program **progs; /* per manifest program, parsed on first use */
    nc_fp16 **owned;     /* the reordered copies of the grouped form */
    int n_owned;
};

static void weights_free(bundle_weights *w) {
    if (!w) return;
    for (int i = 0; w->progs && i < w->man->n_programs; i++)
        mil_program_free(w->progs[i]);
    for (int i = 0; i < w->n_owned; i++)
        free(w->owned[i]);
    free(w->progs);
    free(w->owned);
    free(w);
}

/* The lowering's name of a checkpoint's layer tensor (qwen3_compile.c's
 * table; `alt`: its name in the grouped attention form), or NULL. */
static const char *lowered_name(const qwen3_config *c, const char *name, int alt) {
    if (alt && !strcmp(name, "self_attn.k_norm.weight")) return "k_new_norm_weight";
    static const char *const map[][2] = {
        {"input_layernorm.weight", "attn_norm_weight"},
        {"pre_feedforward_layernorm.weight", "mlp_norm_weight"},
        {"post_feedforward_layernorm.weight", "post_mlp_norm_weight"},
        {"self_attn.q_norm.weight", "q_norm_weight"},
        {"self_attn.k_norm.weight", "k_norm_weight"},
        {"self_attn.q_proj.weight", "q_proj_weight"},
        {"self_attn.k_proj.weight", "k_proj_weight"},
        {"self_attn.v_proj.weight", "v_new_weight"},
        {"self_attn.o_proj.weight", "o_proj_weight"},
        {"mlp.gate_proj.weight", "gate_proj_weight"},
        {"mlp.up_proj.weight", "up_proj_weight"},
        {"mlp.down_proj.weight", "down_proj_weight"}};
    if (!strcmp(name, "post_attention_layernorm.weight")) /* Gemma's follows the attention */
        return c->sandwich_norm ? "post_attn_norm_weight" : "mlp_norm_weight";
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], name)) return map[i][1];
    return NULL;
}

/* The fp16 blob of constant `name` in program i, or NULL. */
static const mil_value *find_blob(const mil_program *p, const char *name) {
    for (int f = 0; f < p->n_functions; f++) {
        const mil_function *fn = p->functions[f];
        for (int v = 0; v < fn->n_vars; v++) {
            const mil_var *x = fn->vars[v];
            if (x->name && !strcmp(x->name, name)) return x->cval;
        }
    }
    return NULL;
}

/* qwen3_tensor_source.mat over the bundle. */
static nc_status bundle_mat(void *user, int layer, const char *name, int rows, int cols,
                            cpu_mat *out, nc_error *err) {
    bundle_weights *w = user;
    const lower_manifest *man = w->man;
    const char *low = lowered_name(&man->cfg, name, man->forms.attention == LOWER_ATTN_GROUPED);
    if (!low) return nc_fail(err, NC_ERR_UNSUPPORTED, "layer %d: no lowered name for %s", layer, name);
    for (int i = 0; i < man->n_programs; i++) {
        if (man->programs[i].layer != layer) continue;
        if (!w->progs[i]) {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", w->dir, man->programs[i].path);
            NC_TRY(mil_parse_file(path, &w->progs[i], err));
        }
        const mil_value *v = find_blob(w->progs[i], low);
        if (!v) continue;
        const uint8_t *bytes;
        size_t size;
        if (v->kind != MIL_VALUE_BLOB || v->type->dtype != MIL_DT_FP16)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: %s is not an fp16 weight.bin blob",
                           man->programs[i].path, low);
        NC_TRY(mil_value_bytes(w->progs[i], v, &bytes, &size, err));
        if (size != (size_t)rows * cols * sizeof(nc_fp16))
            return nc_fail(err, NC_ERR_FORMAT, "%s: %s holds %zu bytes, not [%d, %d] fp16",
                           man->programs[i].path, low, size, rows, cols);
        const void *data = bytes;
        int q = !strcmp(low, "q_proj_weight"), o = !strcmp(low, "o_proj_weight");
        if ((q || o) && man->forms.attention == LOWER_ATTN_GROUPED) {
            nc_fp16 **more = realloc(w->owned, ((size_t)w->n_owned + 1) * sizeof *more);
            if (!more) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
            w->owned = more;
            /* the grouped form's q channel order back to the checkpoint's */
            nc_fp16 *back = malloc((size_t)rows * cols * sizeof *back);
            if (!back) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
            lower_qwen3_group_copy(&man->cfg, data, back, q ? cols : rows, q, 1);
            data = w->owned[w->n_owned++] = back;
        }
        *out = (cpu_mat){CPU_W_F16, data, rows, cols};
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_NOT_FOUND, "layer %d: no program holds %s (%s)", layer, low, name);
}

/* The decoder on the bundle's own weights (Qwen3's decoder only). */
static nc_status open_on_bundle(bundle_cpu_layers *c, const db_host *h,
                                const model_family_row *family, int n_threads, nc_error *err) {
    if (family->open_decoder != qwen3_decoder_open)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "not a Qwen3-layout family");
    bundle_weights *w = calloc(1, sizeof *w);
    if (!w) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    c->bw = w;
    w->man = &h->man;
    snprintf(w->dir, sizeof w->dir, "%s", h->dir);
    w->progs = calloc((size_t)h->man.n_programs + 1, sizeof *w->progs);
    if (!w->progs) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    qwen3_tensor_source src = {bundle_mat, w};
    return qwen3_decoder_open_layers(h->dir, &src, c->layers, n_threads, &c->d, err);
}

nc_status bundle_cpu_layers_open(bundle_cpu_layers *c, const db_host *h,
                                 const model_family_row *family, const unsigned char *layers,
                                 int n_threads, nc_error *err) {
    memset(c, 0, sizeof *c);
    const lower_manifest *man = &h->man;
    c->n_layers = man->cfg.num_hidden_layers;
    c->ctx = man->ctx;
    c->layers = malloc((size_t)c->n_layers + 1);
    if (!c->layers) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    memcpy(c->layers, layers, (size_t)c->n_layers);
    for (int l = 0; l < c->n_layers; l++)
        c->n_cpu += layers[l] != 0;
    if (!family->open_decoder)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "the %s family has no CPU decoder",
                       family->title);
    nc_error why = {0};
    c->source = "the bundle's fp16 weights";
    nc_status st = open_on_bundle(c, h, family, n_threads, &why);
    c->open = 1; /* decoder_close frees what a failed open left */
    if (st) { /* the checkpoint the manifest names, fp32 caches: the CPU engine's own numbers */
        nc_log(NC_LOG_INFO, "ane: the refused layers read the checkpoint: %s", why.msg);
        decoder_close(&c->d);
        weights_free(c->bw);
        c->bw = NULL;
        c->source = "the checkpoint's weights";
        decoder_options o = {n_threads, 0};
        st = family->open_decoder(man->source_dir, &o, &c->d, err);
    }
    if (st) return st;
    if (!c->d.ops->layer_forward || !c->d.ops->layer_state_new)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "the %s decoder cannot run one layer",
                       family->title);
    const decoder_dims *a = &c->d.shape.dims, *b = &h->dims;
    if (a->layers != b->layers || a->hidden != b->hidden || a->heads != b->heads ||
        a->kv_heads != b->kv_heads || a->head_dim != b->head_dim ||
        a->intermediate != b->intermediate || a->n_linear != b->n_linear)
        return nc_fail(err, NC_ERR_FORMAT, "%s: the checkpoint is not the model of the bundle %s",
                       man->source_dir, h->dir);
    return NC_OK;
}

void bundle_cpu_layers_close(bundle_cpu_layers *c) {
    if (c->open) decoder_close(&c->d);
    weights_free(c->bw);
    free(c->layers);
    memset(c, 0, sizeof *c);
}

nc_status bundle_cpu_seq_init(bundle_cpu_seq *s, bundle_cpu_layers *c, nc_error *err) {
    memset(s, 0, sizeof *s);
    s->c = c;
    return c->d.ops->layer_state_new(c->d.model, c->ctx, c->layers, &s->state, err);
}

void bundle_cpu_seq_release(bundle_cpu_seq *s) {
    if (s->state) s->c->d.ops->state_free(s->state);
    s->state = NULL;
}

nc_status bundle_cpu_layer_run(void *seq, int layer, float *rows, int n, int p, nc_error *err) {
    bundle_cpu_seq *s = seq;
    const decoder *d = &s->c->d;
    NC_TRY(d->ops->layer_forward(d->model, s->state, layer, rows, n, p, err));
    if (s->hook) s->hook(s->hook_user, layer, rows, n, d->shape.dims.hidden);
    return NC_OK;
}
