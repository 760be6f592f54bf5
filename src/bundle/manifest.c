/* manifest.json writer and reader (manifest.h). */
#include "bundle/manifest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "bundle/bundle_io.h"
#include "bundle/palettize_manifest.h"
#include "models/family.h"
#include "models/qwen3_config.h"

/* v's name, dtype and shape, a `?` dim read as S (the enumerated bucket
 * form's sequence axis; 0: none may be unknown). */
static nc_status describe_var(const mil_var *v, lower_io *io, const char *fn, int S,
                              nc_error *err) {
    const mil_type *t = v->type;
    if (!v->name || !mil_type_is_tensor(t) || t->rank < 1 || t->rank > 4)
        return nc_fail(err, NC_ERR_INTERNAL, "function %s: I/O is not a tensor of rank 1..4", fn);
    snprintf(io->name, sizeof io->name, "%s", v->name);
    snprintf(io->dtype, sizeof io->dtype, "%s", mil_dtype_name(t->dtype));
    io->rank = t->rank;
    for (int i = 0; i < t->rank; i++) {
        io->shape[i] = t->dims[i] == MIL_DIM_UNKNOWN && S ? S : t->dims[i];
        if (io->shape[i] < 1)
            return nc_fail(err, NC_ERR_INTERNAL, "function %s: '%s' has a `?` dimension", fn,
                           v->name);
    }
    return NC_OK;
}

/* Function fn as the manifest entry of bucket S (0: as declared). */
static nc_status describe_fn(const mil_function *fn, int S, lower_fn_info *fi, nc_error *err) {
    snprintf(fi->name, sizeof fi->name, "%s", fn->name);
    const char *s = strrchr(fn->name, 's');
    fi->seq = S ? S : s ? atoi(s + 1) : 0;
    if (fn->n_inputs > LOWER_MAX_IO || fn->n_outputs > LOWER_MAX_IO)
        return nc_fail(err, NC_ERR_INTERNAL, "%s: too many I/O", fn->name);
    for (int i = 0; i < fn->n_inputs; i++)
        NC_TRY(describe_var(fn->inputs[i], &fi->in[fi->n_in++], fn->name, S, err));
    for (int i = 0; i < fn->n_outputs; i++)
        NC_TRY(describe_var(fn->outputs[i], &fi->out[fi->n_out++], fn->name, S, err));
    return NC_OK;
}

nc_status lower_describe_enumerated(const mil_program *prog, const char *path, int layer,
                                    const int *seqs, int n_seqs, lower_program_info *out,
                                    nc_error *err) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    out->layer = layer;
    if (prog->n_functions * n_seqs > LOWER_MAX_FUNCS)
        return nc_fail(err, NC_ERR_INTERNAL, "%s: too many functions", path);
    for (int s = 0; s < n_seqs; s++)
        for (int f = 0; f < prog->n_functions; f++)
            NC_TRY(describe_fn(prog->functions[f], seqs[s], &out->fns[out->n_fns++], err));
    return NC_OK;
}

nc_status lower_describe_program(const mil_program *prog, const char *path, int layer,
                                 lower_program_info *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    out->layer = layer;
    if (prog->n_functions > LOWER_MAX_FUNCS)
        return nc_fail(err, NC_ERR_INTERNAL, "%s: too many functions", path);
    for (int f = 0; f < prog->n_functions; f++)
        NC_TRY(describe_fn(prog->functions[f], 0, &out->fns[out->n_fns++], err));
    return NC_OK;
}

nc_status lower_manifest_write(const lower_manifest *m, const char *path, nc_error *err) {
    const qwen3_config *c = &m->cfg;
    json_t *root = json_object();
    lower_json_set_header(root);
    /* Llama's and Gemma's configs as their own config.json objects (type,
     * RoPE scaling, ...), which their families' readers take back */
    const model_family_row *fam = m->family;
    json_object_set_new(root, "model",
                        fam && fam->write_config ? fam->write_config(c) : qwen3_config_to_json(c));
    json_t *tok = json_object();
    json_object_set_new(tok, "file", json_string("tokenizer.json"));
    json_object_set_new(tok, "config", json_string("tokenizer_config.json"));
    json_object_set_new(tok, "note", json_string("copied from the checkpoint folder"));
    json_object_set_new(root, "tokenizer", tok);

    json_t *ext = json_object(), *need = json_array();
    json_object_set_new(ext, "dir", json_string(m->source_dir));
    json_array_append_new(need, json_string(m->embed_tensor));
    if (!m->lm_head_on_ane) {
        json_array_append_new(need, json_string(m->final_norm_tensor));
        if (strcmp(m->lm_head_tensor, m->embed_tensor))
            json_array_append_new(need, json_string(m->lm_head_tensor));
    }
    json_object_set_new(ext, "tensors", need);
    json_object_set_new(ext, "embedding", json_string(m->embed_tensor));
    json_object_set_new(ext, "final_norm", json_string(m->final_norm_tensor));
    json_object_set_new(ext, "lm_head", json_string(m->lm_head_tensor));
    json_object_set_new(ext, "how",
                        json_string("safetensors in 'dir' (model.safetensors or the shards of "
                                    "model.safetensors.index.json), looked up by tensor name"));
    json_object_set_new(root, "checkpoint", ext);

    json_t *plan = json_object(), *seqs = json_array();
    json_object_set_new(plan, "ctx", json_integer(m->ctx));
    for (int i = 0; i < m->n_seqs; i++)
        json_array_append_new(seqs, json_integer(m->seqs[i]));
    json_object_set_new(plan, "buckets", seqs);
    json_object_set_new(plan, "decode_bucket", json_integer(m->seqs[0]));
    json_object_set_new(plan, "lm_head", json_string(m->lm_head_on_ane ? "ane" : "cpu"));
    json_object_set_new(plan, "kernels_per_layer", json_integer(m->kernels_per_layer));
    json_object_set_new(plan, "kernels_per_token", json_integer(m->kernels_per_token));
    json_t *forms = json_object(); /* docs/lowering.md, "Lowering forms" */
    json_object_set_new(forms, "program_split",
                        json_string(lower_program_split_name(m->forms.program_split)));
    json_object_set_new(forms, "head_split",
                        json_string(lower_head_split_name(m->forms.head_split)));
    json_object_set_new(forms, "head_rows", json_integer(m->forms.head_rows));
    json_object_set_new(forms, "kv_update", json_string(lower_kv_update_name(m->forms.kv_update)));
    json_object_set_new(forms, "rope", json_string(lower_rope_form_name(m->forms.rope)));
    json_object_set_new(forms, "attention",
                        json_string(lower_attention_form_name(m->forms.attention)));
    json_object_set_new(forms, "exp", json_string(lower_exp_form_name(m->forms.exp)));
    json_object_set_new(forms, "matmul_pad",
                        json_string(lower_matmul_pad_name(m->forms.matmul_pad)));
    json_object_set_new(forms, "max_program_bytes", json_integer(m->forms.max_program_bytes));
    json_object_set_new(forms, "bucket_form",
                        json_string(lower_bucket_form_name(m->forms.bucket_form)));
    json_object_set_new(plan, "forms", forms);
    json_object_set_new(plan, "column_rule",
                        json_string("in an S-wide function, column c holds the token at "
                                    "position p with p mod S == c; unused columns are zero"));
    json_object_set_new(root, "plan", plan);

    json_t *kv = json_object();
    json_object_set_new(kv, "layout", json_string("[1, num_key_value_heads * head_dim, 1, ctx]"));
    json_object_set_new(kv, "dtype", json_string("fp16"));
    json_object_set_new(kv, "per_layer", json_string("k_cache, v_cache"));
    json_object_set_new(kv, "update",
                        json_string(m->forms.kv_update == LOWER_KV_GATHER
                                        ? "kv_<S>: gather(new, j mod S) then select(kv_write > "
                                          "0.5, spread, cache)"
                                    : m->forms.kv_update == LOWER_KV_HOST
                                        ? "host: after qkv_<S>, cache[:, j] = k_new[:, j mod S] "
                                          "where kv_write[j] is 1 (no kernel updates the cache)"
                                        : "kv_<S>: matmul(new, one-hot P[c][j] = (j mod S == "
                                          "c)) then select(kv_write > 0.5, spread, cache)"));
    json_object_set_new(kv, "owner", json_string("host"));
    json_object_set_new(root, "kv_cache", kv);

    json_object_set_new(root, "weights_fp16",
                        lower_json_fp16_stats(&m->fp16, "checkpoint dtype (bf16/fp16/fp32)"));
    json_t *pal = lower_palette_to_json(&m->palettize);
    if (pal) json_object_set_new(root, "palettize", pal);

    json_t *progs = json_array();
    for (int p = 0; p < m->n_programs; p++) {
        const lower_program_info *pi = &m->programs[p];
        json_array_append_new(progs, lower_json_program(pi, pi->layer >= 0 ? "layer" : "head", 0));
    }
    json_object_set_new(root, "programs", progs);
    if (m->lm_head_on_ane) {
        json_t *rows = json_array();
        for (int i = 0; i < m->n_head_chunks; i++)
            json_array_append_new(rows, json_integer(m->head_rows[i]));
        json_object_set_new(root, "head_chunk_rows", rows);
    }
    return lower_json_write(root, path, err);
}

/* --- reading --------------------------------------------------------------- */

/* plan.forms.KEY through its parser; absent, dflt (NULL: required). */
static nc_status read_form(const json_t *o, const char *key, const char *dflt,
                           int (*parse)(const char *), const char *noun, int *out,
                           const char *path, const char *what, nc_error *err) {
    char name[16];
    snprintf(name, sizeof name, "%s", dflt ? dflt : "");
    if (!dflt || json_object_get(o, key))
        NC_TRY(lower_json_str_into(o, key, name, sizeof name, what, err));
    *out = parse(name);
    if (*out < 0)
        return nc_fail(err, NC_ERR_FORMAT, "%s: plan.forms: '%s' is not %s", path, name, noun);
    return NC_OK;
}

/* plan.forms; absent (bundles from before the forms): the defaults of
 * then, one program per layer and one head program of <= 65,536 rows. */
static nc_status read_forms(const json_t *plan, lower_forms *f, const char *path, const char *what,
                            nc_error *err) {
    memset(f, 0, sizeof *f);
    f->head_split = LOWER_HEAD_ONE;
    f->head_rows = LOWER_MAX_HEAD_ROWS;
    f->kv_update = LOWER_KV_GATHER;
    f->rope = LOWER_ROPE_MATMUL;
    f->attention = LOWER_ATTN_BROADCAST;
    f->exp = LOWER_EXP_OP;
    f->matmul_pad = LOWER_PAD_NONE;
    const json_t *o = json_object_get(plan, "forms");
    if (!o) return NC_OK;
    /* each form by its name; the ones added later ("rope" on) may be
     * absent: then the form bundles had before the choice existed */
    int split, head, kv, rope, attn, ex, pad, buckets;
    NC_TRY(read_form(o, "program_split", NULL, lower_program_split_parse, "a program split",
                     &split, path, what, err));
    NC_TRY(read_form(o, "head_split", NULL, lower_head_split_parse, "a head split", &head, path,
                     what, err));
    NC_TRY(read_form(o, "kv_update", NULL, lower_kv_update_parse, "a KV update", &kv, path, what,
                     err));
    NC_TRY(lower_json_int_in(o, "head_rows", 1, LOWER_MAX_HEAD_ROWS, &f->head_rows, what, err));
    NC_TRY(read_form(o, "rope", "matmul", lower_rope_form_parse, "a RoPE form", &rope, path, what,
                     err));
    NC_TRY(read_form(o, "attention", "broadcast", lower_attention_form_parse,
                     "an attention form", &attn, path, what, err));
    NC_TRY(read_form(o, "exp", "op", lower_exp_form_parse, "an exp form", &ex, path, what, err));
    NC_TRY(read_form(o, "matmul_pad", "none", lower_matmul_pad_parse, "a matmul padding", &pad,
                     path, what, err));
    NC_TRY(read_form(o, "bucket_form", "per-bucket", lower_bucket_form_parse, "a bucket form",
                     &buckets, path, what, err));
    f->program_split = (lower_program_split)split;
    f->head_split = (lower_head_split)head;
    f->kv_update = (lower_kv_update)kv;
    f->rope = (lower_rope_form)rope;
    f->attention = (lower_attention_form)attn;
    f->exp = (lower_exp_form)ex;
    f->matmul_pad = (lower_matmul_pad)pad;
    f->bucket_form = (lower_bucket_form)buckets;
    if (json_object_get(o, "max_program_bytes"))
        NC_TRY(lower_json_int_in(o, "max_program_bytes", 0, INT32_MAX, &f->max_program_bytes, what,
                                 err));
    return NC_OK;
}

/* The plan's and programs' integers: any value in [-1, 2^30], checked after. */
static nc_status int_field(const json_t *o, const char *key, int *out, const char *what,
                           nc_error *err) {
    return lower_json_int_in(o, key, -1, 1 << 30, out, what, err);
}

nc_status lower_manifest_read(const char *dir, lower_manifest *m, nc_error *err) {
    memset(m, 0, sizeof *m);
    char path[4200], *text = NULL;
    size_t len = 0;
    NC_TRY(lower_manifest_text(dir, path, sizeof path, &text, &len, err));
    nc_status st = lower_manifest_parse(text, len, path, m, err);
    free(text);
    return st;
}

nc_status lower_manifest_parse(const char *text, size_t len, const char *path, lower_manifest *m,
                               nc_error *err) {
    memset(m, 0, sizeof *m);
    json_t *root = NULL;
    NC_TRY(nc_json_parse(text, len, path, &root, err));
    const char *what = path;
    nc_status st = lower_json_check_header(root, what, err);
    const json_t *model = st ? NULL : lower_json_member(root, "model", 0, what, err);
    if (!st && !model) st = err->code;
    /* the reader of the model's family (Qwen3, Llama, Gemma 3: models/family.h) */
    const model_family_row *fam =
        model_family_of_type(json_string_value(json_object_get(model, "model_type")));
    model_qwen3_reader read = fam && fam->read_config ? fam->read_config : qwen3_config_from_json;
    if (!st) st = read(model, &m->cfg, what, err);
    const json_t *ck = st ? NULL : lower_json_member(root, "checkpoint", 0, what, err);
    if (!st && !ck) st = err->code;
    if (!st) st = lower_json_str_into(ck, "dir", m->source_dir, sizeof m->source_dir, what, err);
    if (!st)
        st = lower_json_str_into(ck, "embedding", m->embed_tensor, sizeof m->embed_tensor, what,
                                 err);
    if (!st)
        st = lower_json_str_into(ck, "final_norm", m->final_norm_tensor,
                                 sizeof m->final_norm_tensor, what, err);
    if (!st)
        st = lower_json_str_into(ck, "lm_head", m->lm_head_tensor, sizeof m->lm_head_tensor, what,
                                 err);
    const json_t *plan = st ? NULL : lower_json_member(root, "plan", 0, what, err);
    if (!st && !plan) st = err->code;
    if (!st) st = int_field(plan, "ctx", &m->ctx, what, err);
    if (!st) st = int_field(plan, "kernels_per_token", &m->kernels_per_token, what, err);
    /* bundles from before the variants hold 4 kernels per layer */
    m->kernels_per_layer = 4;
    if (!st && json_object_get(plan, "kernels_per_layer"))
        st = int_field(plan, "kernels_per_layer", &m->kernels_per_layer, what, err);
    if (!st && (m->kernels_per_layer < 1 || m->kernels_per_layer > 4))
        st = nc_fail(err, NC_ERR_FORMAT, "%s: plan.kernels_per_layer %d is not 1..4", path,
                     m->kernels_per_layer);
    if (!st) st = read_forms(plan, &m->forms, path, what, err);
    char head[8] = "";
    if (!st) st = lower_json_str_into(plan, "lm_head", head, sizeof head, what, err);
    m->lm_head_on_ane = !strcmp(head, "ane");
    const json_t *bk = st ? NULL : lower_json_member(plan, "buckets", 1, what, err);
    if (!st && !bk) st = err->code;
    if (!st && (json_array_size(bk) < 1 || json_array_size(bk) > LOWER_MAX_BUCKETS))
        st = nc_fail(err, NC_ERR_FORMAT, "%s: plan.buckets must list 1..%d sizes", path,
                     LOWER_MAX_BUCKETS);
    for (size_t i = 0; !st && i < json_array_size(bk); i++) {
        int64_t v = json_integer_value(json_array_get(bk, i));
        if (v < 32 || v % 32 || v > m->ctx || (i && v <= m->seqs[i - 1]))
            st = nc_fail(err, NC_ERR_FORMAT,
                         "%s: plan.buckets[%zu] = %lld is not a multiple of 32 "
                         "in ascending order within ctx",
                         path, i, (long long)v);
        else
            m->seqs[m->n_seqs++] = (int)v;
    }
    if (!st && (m->ctx < 32 || m->ctx % 32))
        st = nc_fail(err, NC_ERR_FORMAT, "%s: plan.ctx %d is not a multiple of 32", path, m->ctx);
    if (!st) st = lower_palette_from_json(root, &m->palettize, what, err);
    const json_t *progs = st ? NULL : lower_json_member(root, "programs", 1, what, err);
    if (!st && !progs) st = err->code;
    if (!st) {
        m->programs = calloc(json_array_size(progs) + 1, sizeof *m->programs);
        if (!m->programs) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    for (size_t p = 0; !st && p < json_array_size(progs); p++) {
        const json_t *po = json_array_get(progs, p);
        lower_program_info *pi = &m->programs[m->n_programs++];
        pi->layer = -1;
        if (!json_is_object(po)) {
            st = nc_fail(err, NC_ERR_FORMAT, "%s: programs[%zu] is not an object", path, p);
            break;
        }
        st = lower_json_str_into(po, "path", pi->path, sizeof pi->path, what, err);
        if (!st && json_object_get(po, "layer")) st = int_field(po, "layer", &pi->layer, what, err);
        if (!st && strstr(pi->path, ".."))
            st = nc_fail(err, NC_ERR_FORMAT, "%s: program path '%s' leaves the bundle", path,
                         pi->path);
        const json_t *fns = st ? NULL : lower_json_member(po, "functions", 1, what, err);
        if (!st && !fns) st = err->code;
        if (!st && json_array_size(fns) > LOWER_MAX_FUNCS)
            st = nc_fail(err, NC_ERR_FORMAT, "%s: %s lists too many functions", path, pi->path);
        for (size_t f = 0; !st && f < json_array_size(fns); f++) {
            const json_t *fo = json_array_get(fns, f);
            lower_fn_info *fi = &pi->fns[pi->n_fns++];
            if (!json_is_object(fo)) {
                st = nc_fail(err, NC_ERR_FORMAT, "%s: a function of %s is not an object", path,
                             pi->path);
                break;
            }
            st = lower_json_str_into(fo, "name", fi->name, sizeof fi->name, what, err);
            if (!st) st = int_field(fo, "seq", &fi->seq, what, err);
            if (!st) st = lower_json_read_fn_io(fo, fi, 1, 4, 1 << 24, what, err);
        }
    }
    if (!st && m->lm_head_on_ane) {
        const json_t *rows = lower_json_member(root, "head_chunk_rows", 1, what, err);
        if (!rows) st = err->code;
        if (!st && (json_array_size(rows) < 1 || json_array_size(rows) > LOWER_MAX_HEAD_CHUNKS))
            st = nc_fail(err, NC_ERR_FORMAT, "%s: head_chunk_rows must list 1..%d sizes", path,
                         LOWER_MAX_HEAD_CHUNKS);
        for (size_t i = 0; !st && i < json_array_size(rows); i++) {
            json_int_t v = json_integer_value(json_array_get(rows, i));
            if (v < 1 || v > LOWER_MAX_HEAD_ROWS)
                st = nc_fail(err, NC_ERR_FORMAT, "%s: head_chunk_rows[%zu] is not in [1, %d]", path,
                             i, LOWER_MAX_HEAD_ROWS);
            else
                m->head_rows[m->n_head_chunks++] = v;
        }
    }
    json_decref(root);
    if (st) lower_manifest_free(m);
    return st;
}

void lower_manifest_free(lower_manifest *m) {
    free(m->programs);
    m->programs = NULL;
    m->n_programs = 0;
}

const lower_fn_info *lower_manifest_fn(const lower_program_info *p, const char *fn) {
    for (int i = 0; i < p->n_fns; i++)
        if (!strcmp(p->fns[i].name, fn)) return &p->fns[i];
    return NULL;
}

const lower_io *lower_fn_io(const lower_fn_info *f, const char *name, int is_output) {
    int n = is_output ? f->n_out : f->n_in;
    const lower_io *io = is_output ? f->out : f->in;
    for (int i = 0; i < n; i++)
        if (!strcmp(io[i].name, name)) return &io[i];
    return NULL;
}
