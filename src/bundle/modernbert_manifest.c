/* Encoder bundle manifest writer and reader (modernbert_manifest.h). */
#include "bundle/modernbert_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "bundle/bundle_io.h"
#include "bundle/palettize_manifest.h"
#include "models/modernbert.h"

static json_t *ints_json(const int *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

nc_status mb_manifest_write(const mb_manifest *m, const char *path, nc_error *err) {
    json_t *root = json_object(), *model = json_object(), *ck = json_object(),
           *plan = json_object(), *tensors = json_array();
    lower_json_set_header(root);
    json_object_set_new(model, "model_type", json_string("modernbert"));
    json_object_set_new(model, "hidden_size", json_integer(m->hidden_size));
    json_object_set_new(model, "num_hidden_layers", json_integer(m->num_hidden_layers));
    json_object_set_new(model, "num_attention_heads", json_integer(m->num_attention_heads));
    json_object_set_new(model, "head_dim", json_integer(m->head_dim));
    json_object_set_new(model, "vocab_size", json_integer(m->vocab_size));
    json_object_set_new(root, "model", model);
    json_object_set_new(root, "tokenizer", json_string("tokenizer.json (copied)"));

    json_object_set_new(ck, "dir", json_string(m->source_dir));
    json_array_append_new(tensors, json_string("embeddings.tok_embeddings.weight"));
    json_array_append_new(tensors, json_string("embeddings.norm.weight"));
    json_array_append_new(tensors, json_string("head.* / decoder.* / classifier.* (when present)"));
    json_object_set_new(ck, "tensors", tensors);
    json_object_set_new(ck, "how",
                        json_string("the CPU engine loads 'dir' (modernbert_load) for the "
                                    "embedding rows, the embedding LayerNorm and the tail"));
    json_object_set_new(root, "checkpoint", ck);

    json_object_set_new(plan, "buckets", ints_json(m->seqs, m->n_seqs));
    json_object_set_new(plan, "batches", ints_json(m->batches, m->n_batches));
    json_object_set_new(plan, "layout", json_string("[B, C, 1, L]"));
    json_object_set_new(plan, "mask",
                        json_string("additive fp16 [b, key, 0, query]: 0 or -1e4 "
                                    "(padding keys; mask_local adds the window band)"));
    json_object_set_new(plan, "island", json_string("every encoder layer and the final norm"));
    json_object_set_new(plan, "cpu",
                        json_string("tokenizer, embedding rows, embedding LayerNorm; "
                                    "tail: pooling, MLM or classifier head"));
    json_object_set_new(plan, "crossings_per_call", json_integer(m->crossings_per_call));
    json_object_set_new(root, "plan", plan);

    json_object_set_new(root, "weights_fp16", lower_json_fp16_stats(&m->fp16, NULL));
    json_t *pal = lower_palette_to_json(&m->palettize);
    if (pal) json_object_set_new(root, "palettize", pal);

    json_t *progs = json_array();
    json_array_append_new(progs, lower_json_program(&m->program, "encoder", 1));
    json_object_set_new(root, "programs", progs);
    return lower_json_write(root, path, err);
}

/* --- reading --------------------------------------------------------------- */

/* An ascending list of 1..MB_LOWER_MAX_SHAPES integers in [lo, hi], each a
 * multiple of `mult`. */
static nc_status shape_list(const json_t *plan, const char *key, int lo, int hi, int mult, int *v,
                            int *n, const char *what, nc_error *err) {
    const json_t *a = lower_json_member(plan, key, 1, what, err);
    if (!a) return err->code;
    if (json_array_size(a) < 1 || json_array_size(a) > MB_LOWER_MAX_SHAPES)
        return nc_fail(err, NC_ERR_FORMAT, "%s: plan.%s must list 1..%d sizes", what, key,
                       MB_LOWER_MAX_SHAPES);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *e = json_array_get(a, i);
        json_int_t x = json_is_integer(e) ? json_integer_value(e) : -1;
        if (x < lo || x > hi || x % mult || (i && x <= v[i - 1]))
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: plan.%s[%zu] is not an ascending size in "
                           "[%d, %d] (multiple of %d)",
                           what, key, i, lo, hi, mult);
        v[(*n)++] = (int)x;
    }
    return NC_OK;
}

static nc_status parse_root(const json_t *root, const char *what, mb_manifest *m, nc_error *err) {
    const char *s = NULL;
    NC_TRY(lower_json_check_header(root, what, err));
    const json_t *model = lower_json_member(root, "model", 0, what, err);
    if (!model) return err->code;
    NC_TRY(nc_json_str(model, "model_type", &s, 1, what, err));
    if (strcmp(s, "modernbert"))
        return nc_fail(err, NC_ERR_FORMAT, "%s: model_type is '%s', not an encoder bundle", what,
                       s);
    NC_TRY(lower_json_int_in(model, "hidden_size", 2, 1 << 16, &m->hidden_size, what, err));
    NC_TRY(lower_json_int_in(model, "num_hidden_layers", 1, MODERNBERT_MAX_LAYERS,
                             &m->num_hidden_layers, what, err));
    NC_TRY(lower_json_int_in(model, "num_attention_heads", 1, 1 << 12, &m->num_attention_heads,
                             what, err));
    NC_TRY(lower_json_int_in(model, "head_dim", 2, 1 << 12, &m->head_dim, what, err));
    NC_TRY(lower_json_int_in(model, "vocab_size", 1, 1 << 24, &m->vocab_size, what, err));
    const json_t *ck = lower_json_member(root, "checkpoint", 0, what, err);
    if (!ck) return err->code;
    NC_TRY(lower_json_str_into(ck, "dir", m->source_dir, sizeof m->source_dir, what, err));
    const json_t *plan = lower_json_member(root, "plan", 0, what, err);
    if (!plan) return err->code;
    NC_TRY(shape_list(plan, "buckets", 32, 1 << 16, 32, m->seqs, &m->n_seqs, what, err));
    NC_TRY(shape_list(plan, "batches", 1, 1 << 10, 1, m->batches, &m->n_batches, what, err));
    NC_TRY(lower_json_int_in(plan, "crossings_per_call", 0, 1 << 10, &m->crossings_per_call, what,
                             err));
    NC_TRY(lower_palette_from_json(root, &m->palettize, what, err));
    const json_t *progs = lower_json_member(root, "programs", 1, what, err);
    if (!progs) return err->code;
    const json_t *po = json_array_get(progs, 0);
    if (json_array_size(progs) != 1 || !json_is_object(po))
        return nc_fail(err, NC_ERR_FORMAT, "%s: programs must hold exactly the encoder program",
                       what);
    lower_program_info *pi = &m->program;
    pi->layer = -1;
    NC_TRY(lower_json_str_into(po, "path", pi->path, sizeof pi->path, what, err));
    if (strstr(pi->path, "..") || pi->path[0] == '/')
        return nc_fail(err, NC_ERR_FORMAT, "%s: program path '%s' leaves the bundle", what,
                       pi->path);
    const json_t *fns = lower_json_member(po, "functions", 1, what, err);
    if (!fns) return err->code;
    if (json_array_size(fns) != (size_t)(m->n_seqs * m->n_batches) ||
        json_array_size(fns) > LOWER_MAX_FUNCS)
        return nc_fail(err, NC_ERR_FORMAT, "%s: %zu functions for %d buckets x %d batches", what,
                       json_array_size(fns), m->n_seqs, m->n_batches);
    for (size_t f = 0; f < json_array_size(fns); f++) {
        const json_t *fo = json_array_get(fns, f);
        lower_fn_info *fi = &pi->fns[pi->n_fns++];
        int batch = 0;
        if (!json_is_object(fo))
            return nc_fail(err, NC_ERR_FORMAT, "%s: functions[%zu] is not an object", what, f);
        NC_TRY(lower_json_str_into(fo, "name", fi->name, sizeof fi->name, what, err));
        NC_TRY(lower_json_int_in(fo, "seq", 32, 1 << 16, &fi->seq, what, err));
        NC_TRY(lower_json_int_in(fo, "batch", 1, 1 << 10, &batch, what, err));
        char want[64];
        mb_lower_fn_name(want, sizeof want, batch, fi->seq);
        if (strcmp(want, fi->name))
            return nc_fail(err, NC_ERR_FORMAT, "%s: function '%s' should be named '%s'", what,
                           fi->name, want);
        NC_TRY(lower_json_read_fn_io(fo, fi, 4, 4, 1 << 20, what, err));
    }
    return NC_OK;
}

nc_status mb_manifest_parse(const char *text, size_t len, const char *path, mb_manifest *m,
                            nc_error *err) {
    memset(m, 0, sizeof *m);
    json_t *root = NULL;
    NC_TRY(nc_json_parse(text, len, path, &root, err));
    nc_status st = parse_root(root, path, m, err);
    json_decref(root);
    return st;
}

nc_status mb_manifest_read(const char *dir, mb_manifest *m, nc_error *err) {
    char path[4200], *text = NULL;
    size_t len = 0;
    NC_TRY(lower_manifest_text(dir, path, sizeof path, &text, &len, err));
    nc_status st = mb_manifest_parse(text, len, path, m, err);
    free(text);
    return st;
}

int mb_json_names_modernbert(const char *path, const char *object) {
    json_t *root = NULL;
    nc_error err = {0};
    if (nc_json_load_file(path, &root, &err) != NC_OK) return 0;
    const json_t *o = object ? json_object_get(root, object) : root;
    const json_t *t = o ? json_object_get(o, "model_type") : NULL;
    int yes = json_is_string(t) && !strcmp(json_string_value(t), "modernbert");
    json_decref(root);
    return yes;
}

int mb_manifest_is_encoder(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    return mb_json_names_modernbert(path, "model");
}
