/* The relower rung's hook (bundle_relower.h): each form is a function of
 * the refused MIL function and the bundle's manifest, and calls the same
 * src/lower builders `nectar compile` does, on weights read back from the
 * program's weight.bin. */
#include "engine/bundle_relower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_stage.h"
#include "lower/qwen3_lower.h"
#include "mil/print.h"

/* Weight `name` of fn (a const of a BLOBFILE or inline fp16 tensor) as a
 * lower_weight over its bytes (valid while prog lives); *found 0 when fn
 * has no such value. */
static nc_status bundle_weight(const mil_program *prog, const mil_function *fn, const char *name,
                               lower_weight *w, int *found, nc_error *err) {
    const mil_var *v = mil_function_var(fn, name);
    memset(w, 0, sizeof *w);
    *found = v != NULL;
    if (!v) return NC_OK;
    if (!v->cval)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: '%s' is not a constant (palettized weights are not read back)",
                       fn->name, name);
    const mil_type *t = v->type;
    if (!t || t->dtype != MIL_DT_FP16 || t->rank != 4)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: '%s' is not an fp16 tensor of rank 4",
                       fn->name, name);
    const uint8_t *bytes;
    size_t n;
    NC_TRY(mil_value_bytes(prog, v->cval, &bytes, &n, err));
    w->data = (const nc_fp16 *)bytes;
    lower_weight_shape4(w, t->dims[0], t->dims[1], t->dims[2], t->dims[3]);
    return NC_OK;
}

/* Prints the built program into dst/model.mil (the builder wrote its
 * weights) and frees it. */
static nc_status finish(mil_program *prog, const char *dst, nc_error *err) {
    char path[4600];
    snprintf(path, sizeof path, "%s/model.mil", dst);
    nc_status st = mil_print_file(prog, path, err);
    mil_program_free(prog);
    return st;
}

/* The head with every conv wider than LOWER_HEAD_ROWS_DEFAULT as convs
 * over row slices of its weight: the same function head_s32, the same
 * logits_i outputs (a head split `one` keeps its several outputs). */
static nc_status relower_head(const ane_relower_ask *ask, const mil_function *fn, char *form,
                              size_t form_cap, nc_error *err) {
    const lower_manifest *man = ask->man;
    lower_weight norm, chunks[LOWER_MAX_HEAD_CHUNKS];
    if (ask->attempt) /* one form */
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: no other head form to try", fn->name);
    int found, first = -1, wide = 0, n = fn->n_outputs;
    NC_TRY(bundle_weight(ask->prog, fn, "final_norm_weight", &norm, &found, err));
    if (!found || n < 1 || n > LOWER_MAX_HEAD_CHUNKS ||
        sscanf(fn->outputs[0]->name, "logits_%d", &first) != 1)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: not a head function of this lowering",
                       fn->name);
    for (int k = 0; k < n; k++) {
        char name[64];
        snprintf(name, sizeof name, "logits_%d_weight", first + k);
        NC_TRY(bundle_weight(ask->prog, fn, name, &chunks[k], &found, err));
        if (!found) { /* Gemma 3's softcapped head: the conv is logits_i_raw */
            snprintf(name, sizeof name, "logits_%d_raw_weight", first + k);
            NC_TRY(bundle_weight(ask->prog, fn, name, &chunks[k], &found, err));
        }
        if (!found)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: no weight for output logits_%d",
                           fn->name, first + k);
        wide += chunks[k].dims[0] > LOWER_HEAD_ROWS_DEFAULT;
    }
    if (!wide)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: no conv wider than %d channels to slice, and no other head form is "
                       "re-lowered",
                       fn->name, LOWER_HEAD_ROWS_DEFAULT);
    lower_plan plan = {.cfg = &man->cfg, .ctx = man->ctx};
    mil_program *prog = NULL;
    NC_TRY(ane_make_dirs(ask->dst, err));
    NC_TRY(lower_qwen3_head_program_sliced(&plan, &norm, chunks, n, first, LOWER_HEAD_ROWS_DEFAULT,
                                           ask->dst, &prog, err));
    snprintf(form, form_cap, "head rows %d", LOWER_HEAD_ROWS_DEFAULT);
    return finish(prog, ask->dst, err);
}

/* The layer weights fn holds, read back from the bundle by the names
 * the lowering gives their consts (a fused kernel holds more of them);
 * those it does not hold stay NULL, as its stages do not read them. The
 * shapes are the config's (a weight stored in another view, such as the
 * grouped form's q_norm [1, hd, 1, 1], must hold as many values). */
static nc_status bundle_layer_weights(const mil_program *prog, const mil_function *fn,
                                      const qwen3_config *c, lower_layer_weights *w,
                                      nc_error *err) {
    struct {
        lower_weight *w;
        const char *name;
    } t[] = {{&w->attn_norm, "attn_norm_weight"}, {&w->q, "q_proj_weight"},
             {&w->k, "k_proj_weight"},            {&w->v, "v_new_weight"},
             {&w->q_norm, "q_norm_weight"},       {&w->k_norm, "k_norm_weight"},
             {&w->out_gate, "gate_weight"},       {&w->o, "o_proj_weight"},
             {&w->mlp_norm, "mlp_norm_weight"},   {&w->gate, "gate_proj_weight"},
             {&w->up, "up_proj_weight"},          {&w->down, "down_proj_weight"},
             {&w->post_attn_norm, "post_attn_norm_weight"},
             {&w->post_mlp_norm, "post_mlp_norm_weight"}};
    int64_t held[sizeof t / sizeof t[0]];
    memset(w, 0, sizeof *w);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int found;
        NC_TRY(bundle_weight(prog, fn, t[i].name, t[i].w, &found, err));
        held[i] = t[i].w->dims[0] * t[i].w->dims[1] * t[i].w->dims[2] * t[i].w->dims[3];
    }
    lower_qwen3_layer_shapes(c, w);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const lower_weight *x = t[i].w;
        if (x->data && held[i] != x->dims[0] * x->dims[1] * x->dims[2] * x->dims[3])
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "%s: '%s' holds %lld values, the config gives %lld", fn->name,
                           t[i].name, (long long)held[i],
                           (long long)(x->dims[0] * x->dims[1] * x->dims[2] * x->dims[3]));
    }
    return NC_OK;
}

/* The rotate-half matrix R [1, 1, hd, hd] fn's RoPE uses, read back (the
 * matmul form's rope_rotate_half, or the first group of the conv form's
 * weight: Qwen3.5's partial rotary is in it); data NULL when fn has no
 * RoPE. */
static nc_status bundle_rope(const mil_program *prog, const mil_function *fn, int hd,
                             lower_weight *r, nc_error *err) {
    int found;
    NC_TRY(bundle_weight(prog, fn, "rope_rotate_half", r, &found, err));
    if (!found) NC_TRY(bundle_weight(prog, fn, "q_rope_rot_weight", r, &found, err));
    if (found && r->dims[0] * r->dims[1] * r->dims[2] * r->dims[3] < (int64_t)hd * hd)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: its RoPE matrix is smaller than %d x %d",
                       fn->name, hd, hd);
    lower_weight_shape4(r, 1, 1, hd, hd);
    return NC_OK;
}

/* The stages a layer kernel fuses (bits: 1 qkv, 2 kv, 4 attn, 8 mlp), as
 * the lowering names its kernels; 0 for a name it does not write. */
static int kernel_stages(const char *kernel) {
    static const struct {
        const char *name;
        int stages;
    } K[] = {{"qkv", 1}, {"kv", 2},     {"attn", 4},      {"mlp", 8},
             {"kvattn", 6}, {"qkva", 7}, {"layer", 15}};
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++)
        if (!strcmp(K[i].name, kernel)) return K[i].stages;
    return 0;
}

/* The form changes a kernel can be lowered again in, each avoiding a
 * construct a device may refuse: the KV update's other form (gather <->
 * onehot: the same I/O; `host` has no update in a kernel), RoPE as a conv
 * instead of a broadcast matmul, the grouped attention instead of the
 * broadcast one. */
enum { CHANGE_KV = 1, CHANGE_ROPE = 2, CHANGE_ATTN = 4 };

static int changes_for(int stages, const lower_forms *f, int gated, int groups) {
    int c = 0;
    if ((stages & 2) && f->kv_update != LOWER_KV_HOST) c |= CHANGE_KV;
    if ((stages & 1) && f->rope == LOWER_ROPE_MATMUL) c |= CHANGE_ROPE;
    if ((stages & 4) && f->attention == LOWER_ATTN_BROADCAST && !gated && groups > 1)
        c |= CHANGE_ATTN;
    return c;
}

/* Candidate `attempt` (0, 1, ...): each change alone, then all of them
 * together; 0 past the last. */
static int candidate(int changes, int attempt) {
    int n = 0;
    for (int bit = 1; bit <= CHANGE_ATTN; bit <<= 1)
        if ((changes & bit) && n++ == attempt) return bit;
    return n > 1 && attempt == n ? changes : 0;
}

/* Applies change set c to the plan's forms and names it in form. */
static void apply(int c, int stages, lower_plan *p, char *form, size_t cap) {
    lower_forms *f = &p->forms;
    form[0] = '\0';
    if (c & CHANGE_KV) {
        f->kv_update = f->kv_update == LOWER_KV_GATHER ? LOWER_KV_ONEHOT : LOWER_KV_GATHER;
        snprintf(form, cap, "kv update %s", lower_kv_update_name(f->kv_update));
    }
    /* the grouped form's q takes RoPE as a conv: a kernel computing q changes both */
    int rope = (c & CHANGE_ROPE) || ((c & CHANGE_ATTN) && (stages & 1) && f->rope != LOWER_ROPE_CONV);
    if (rope) f->rope = LOWER_ROPE_CONV;
    if (rope)
        snprintf(form + strlen(form), cap - strlen(form), "%srope conv", form[0] ? " + " : "");
    if (c & CHANGE_ATTN) {
        f->attention = LOWER_ATTN_GROUPED;
        p->attn_q_by_head = !(stages & 1); /* q comes in as qkv wrote it */
        snprintf(form + strlen(form), cap - strlen(form), "%sattention grouped",
                 form[0] ? " + " : "");
    }
}

/* A layer function (kernel_sS) lowered again in another form: the same
 * kernel and bucket, its cache length and host inputs as the function's
 * own (a sliding layer's window, its *_local inputs), the weights and the
 * RoPE matrix it holds read back from the program. The grouped attention
 * in a kernel that also computes q permutes copies of q_proj's rows and
 * o_proj's columns (lower_qwen3_group_order); an attn kernel alone
 * transposes q inside instead (lower_plan.attn_q_by_head). */
static nc_status relower_layer(const ane_relower_ask *ask, const mil_function *fn, char *form,
                               size_t form_cap, nc_error *err) {
    const lower_manifest *man = ask->man;
    const qwen3_config *c = &man->cfg;
    const char *us = strrchr(fn->name, '_');
    int S = 0, gated = 0;
    char kernel[64];
    if (!us || sscanf(us, "_s%d", &S) != 1 || S < 1 || (size_t)(us - fn->name) >= sizeof kernel ||
        man->forms.bucket_form == LOWER_BUCKETS_ENUMERATED)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: not a per-bucket layer function (the enumerated form is not "
                       "re-lowered)",
                       fn->name);
    snprintf(kernel, sizeof kernel, "%.*s", (int)(us - fn->name), fn->name);
    lower_plan plan = {.cfg = c, .ctx = man->ctx, .n_seqs = 1, .seqs = {S},
                       .kernels_per_layer = man->kernels_per_layer, .forms = man->forms};
    for (int i = 0; i < fn->n_inputs; i++) {
        const char *in = fn->inputs[i]->name;
        size_t n = strlen(in);
        if (n > 6 && !strcmp(in + n - 6, "_local")) plan.local = 1;
        if (!strcmp(in, "k_cache")) plan.ctx = (int)fn->inputs[i]->type->dims[3];
        gated |= !strcmp(in, "gate");
    }
    int k = -1;
    for (int i = 0; i < lower_qwen3_kernels(&plan); i++)
        if (!strcmp(lower_qwen3_kernel_name(&plan, i), kernel)) k = i;
    int stages = kernel_stages(kernel);
    gated |= mil_function_var(fn, "gate_weight") != NULL; /* Qwen3.5's output gate */
    int groups = c->num_key_value_heads > 0 ? c->num_attention_heads / c->num_key_value_heads : 1;
    int change = k < 0 ? 0 : candidate(changes_for(stages, &plan.forms, gated, groups), ask->attempt);
    if (!change)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       ask->attempt ? "%s: no other form of kernel %s to try"
                                    : "%s: no other form of kernel %s is re-lowered",
                       fn->name, kernel);
    apply(change, stages, &plan, form, form_cap);
    lower_layer_weights w;
    lower_weight rope;
    NC_TRY(bundle_layer_weights(ask->prog, fn, c, &w, err));
    NC_TRY(bundle_rope(ask->prog, fn, c->head_dim, &rope, err));
    nc_fp16 *q = NULL, *o = NULL; /* the grouped order's copies */
    nc_status st = NC_OK;
    if ((change & CHANGE_ATTN) && (stages & 1)) {
        size_t nq = (size_t)(w.q.dims[0] * w.q.dims[1]), no = (size_t)(w.o.dims[0] * w.o.dims[1]);
        q = w.q.data ? malloc(nq * sizeof *q) : NULL;
        o = w.o.data ? malloc(no * sizeof *o) : NULL;
        if (!q || !o) st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", fn->name);
        if (!st) {
            memcpy(q, w.q.data, nq * sizeof *q);
            memcpy(o, w.o.data, no * sizeof *o);
            w.q.data = q;
            w.o.data = o;
            st = lower_qwen3_group_order(c, &w.q, 1, err);
        }
        if (!st) st = lower_qwen3_group_order(c, &w.o, 0, err);
    }
    mil_program *prog = NULL;
    if (!st) st = ane_make_dirs(ask->dst, err);
    if (!st) st = lower_qwen3_layer_part(&plan, k, 0, &w, &rope, ask->dst, &prog, err);
    free(q);
    free(o);
    return st ? st : finish(prog, ask->dst, err);
}

nc_status engine_bundle_relower(void *user, const ane_relower_ask *ask, char *form,
                                size_t form_cap, nc_error *err) {
    (void)user;
    const lower_program_info *pi = &ask->man->programs[ask->program];
    const mil_function *fn = ask->prog ? mil_program_function(ask->prog, ask->fn) : NULL;
    if (!fn) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no function %s", pi->path, ask->fn);
    if (pi->layer < 0) return relower_head(ask, fn, form, form_cap, err);
    return relower_layer(ask, fn, form, form_cap, err);
}
