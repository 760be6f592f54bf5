/* The encoder compile driver (modernbert_compile.h): plan the shapes, convert
 * every encoder weight to fp16, lower the program, write the bundle. */
#define _XOPEN_SOURCE 700
#include "lower/modernbert_compile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mmap.h"
#include "base/timer.h"
#include "io/hf_weights.h"
#include "bundle/bundle_io.h"
#include "bundle/modernbert_manifest.h"
#include "mil/print.h"

typedef struct mb_compile {
    const mb_compile_options *opt;
    modernbert_config cfg;
    hf_weights *w;
    nc_pool *pool;
    const char *prefix; /* "model." in the head classes, "" for ModernBertModel */
    lower_fp16_stats stats;
    lower_palette_stats pal;
    int seqs[MB_LOWER_MAX_SHAPES], n_seqs, batches[MB_LOWER_MAX_SHAPES], n_batches;
} mb_compile;

/* Converts encoder tensor `name` ([d0] or [d0, d1]) into a new fp16 buffer. */
static nc_status load(mb_compile *c, const char *name, int64_t d0, int64_t d1, lower_weight *w,
                      nc_error *err) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", c->prefix, name);
    return lower_tensor_load_fp16(c->w, c->pool, c->opt->model_dir, full, d0, d1, &c->stats, w,
                                  err);
}

static nc_status load_weights(mb_compile *c, mb_encoder_weights *w, nc_error *err) {
    const modernbert_config *q = &c->cfg;
    int64_t D = q->hidden_size, I = q->intermediate_size;
    for (int l = 0; l < q->num_hidden_layers; l++) {
        mb_layer_weights *lw = &w->layers[l];
        struct {
            lower_weight *w;
            const char *name;
            int64_t d0, d1;
        } t[] = {
            {&lw->wqkv, "attn.Wqkv.weight", 3 * D, D}, {&lw->wo, "attn.Wo.weight", D, D},
            {&lw->mlp_norm, "mlp_norm.weight", D, 0},  {&lw->wi, "mlp.Wi.weight", 2 * I, D},
            {&lw->wo_mlp, "mlp.Wo.weight", D, I},      {&lw->attn_norm, "attn_norm.weight", D, 0}};
        /* layer 0 has no attn_norm (nn.Identity): its tensor is absent */
        int n = l == 0 ? 5 : 6;
        for (int i = 0; i < n; i++) {
            char name[128];
            snprintf(name, sizeof name, "layers.%d.%s", l, t[i].name);
            NC_TRY(load(c, name, t[i].d0, t[i].d1, t[i].w, err));
            if (c->opt->palettize.bits && t[i].d1) /* the projections */
                NC_TRY(lower_palettize(c->pool, t[i].w, &c->opt->palettize, name, &c->pal, err));
        }
    }
    for (int l = 0; c->opt->lower.no_concat && l < q->num_hidden_layers; l++) {
        /* per-head column blocks of the attention output projection */
        mb_layer_weights *lw = &w->layers[l];
        int H = q->num_attention_heads, hd = q->head_dim;
        lw->wo_heads = calloc((size_t)H, sizeof *lw->wo_heads);
        nc_fp16 *blk = lw->wo_heads ? malloc((size_t)D * D * sizeof *blk) : NULL;
        if (!blk) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
        for (int h = 0; h < H; h++) {
            nc_fp16 *dst = blk + (size_t)h * D * hd;
            for (int64_t o = 0; o < D; o++)
                memcpy(dst + o * hd, lw->wo.data + o * D + (int64_t)h * hd,
                       (size_t)hd * sizeof *dst);
            lw->wo_heads[h].data = dst;
        }
    }
    NC_TRY(load(c, "final_norm.weight", D, 0, &w->final_norm, err));
    w->rot_head.data = lower_rope_matrix(q->head_dim);
    if (!w->rot_head.data) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    if (c->opt->lower.wrong_rope_across_heads) {
        w->rot_all.data = lower_rope_matrix(q->hidden_size);
        if (!w->rot_all.data) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    return NC_OK;
}

static void free_weights(mb_encoder_weights *w, int n_layers) {
    for (int l = 0; w->layers && l < n_layers; l++) {
        mb_layer_weights *lw = &w->layers[l];
        lower_weight *all[] = {&lw->attn_norm, &lw->wqkv, &lw->wo,
                               &lw->mlp_norm,  &lw->wi,   &lw->wo_mlp};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
            free((void *)all[i]->data);
            free(all[i]->pal);
        }
        if (lw->wo_heads) free((void *)lw->wo_heads[0].data); /* one block for all heads */
        free(lw->wo_heads);
    }
    free(w->layers);
    free((void *)w->final_norm.data);
    free((void *)w->rot_head.data);
    free((void *)w->rot_all.data);
}

static nc_status plan(mb_compile *c, nc_error *err) {
    const mb_compile_options *o = c->opt;
    int max_pos = c->cfg.max_position_embeddings;
    static const int def_seqs[] = {64, 96, 128}, def_batches[] = {1, 3};
    int n = o->n_seqs ? o->n_seqs : 3;
    for (int i = 0; i < n; i++) {
        int s = o->n_seqs ? o->seqs[i] : def_seqs[i];
        if (s < 32 || s % 32)
            return nc_fail(err, NC_ERR_INVALID, "--buckets: %d is not a multiple of 32", s);
        if (s > max_pos) {
            if (o->n_seqs)
                return nc_fail(err, NC_ERR_INVALID,
                               "--buckets: %d exceeds max_position_embeddings %d", s, max_pos);
            continue;
        }
        if (c->n_seqs && s <= c->seqs[c->n_seqs - 1])
            return nc_fail(err, NC_ERR_INVALID, "--buckets: sizes must ascend");
        c->seqs[c->n_seqs++] = s;
    }
    if (!c->n_seqs)
        return nc_fail(err, NC_ERR_INVALID,
                       "%s: max_position_embeddings %d is below 64; "
                       "give --buckets",
                       o->model_dir, max_pos);
    n = o->n_batches ? o->n_batches : 2;
    for (int i = 0; i < n; i++) {
        int b = o->n_batches ? o->batches[i] : def_batches[i];
        if (b < 1 || b > 64)
            return nc_fail(err, NC_ERR_INVALID, "--batches: %d is not in [1, 64]", b);
        if (c->n_batches && b <= c->batches[c->n_batches - 1])
            return nc_fail(err, NC_ERR_INVALID, "--batches: sizes must ascend");
        c->batches[c->n_batches++] = b;
    }
    if (c->n_seqs * c->n_batches > LOWER_MAX_FUNCS)
        return nc_fail(err, NC_ERR_INVALID, "%d buckets x %d batches: at most %d functions",
                       c->n_seqs, c->n_batches, LOWER_MAX_FUNCS);
    return NC_OK;
}

/* Host buffers copied per call: x and mask_global in, hidden out, plus
 * mask_local where the window bites (counted for the largest bucket). */
static int crossings(const modernbert_config *c, int seq) {
    return 3 + mb_lower_needs_local_mask(c, seq);
}

static nc_status build(mb_compile *c, const char *tmp, mb_manifest *man, nc_error *err) {
    const mb_compile_options *o = c->opt;
    const modernbert_config *q = &c->cfg;
    mb_encoder_weights w;
    memset(&w, 0, sizeof w);
    w.layers = calloc((size_t)q->num_hidden_layers, sizeof *w.layers);
    if (!w.layers) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    mb_lower_shapes(q, &w);
    nc_status st = load_weights(c, &w, err);
    mb_lower_shapes(q, &w); /* again: the per-head Wo blocks exist now */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/encoder", tmp);
    mil_program *prog = NULL;
    if (!st)
        st = mb_lower_encoder_program(q, &w, c->batches, c->n_batches, c->seqs, c->n_seqs,
                                      &o->lower, dir, &prog, err);
    char path[4300];
    snprintf(path, sizeof path, "%s/model.mil", dir);
    if (!st) st = mil_print_file(prog, path, err);
    if (!st) st = lower_describe_program(prog, "encoder/model.mil", -1, &man->program, err);
    mil_program_free(prog);
    free_weights(&w, q->num_hidden_layers);
    return st;
}

nc_status lower_modernbert_compile(const mb_compile_options *opt, mb_compile_report *rep,
                                   nc_error *err) {
    mb_compile *c = calloc(1, sizeof *c);
    mb_manifest *man = calloc(1, sizeof *man);
    if (!c || !man) {
        free(c);
        free(man);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    memset(rep, 0, sizeof *rep);
    c->opt = opt;
    double t0 = nc_now_s();
    char tmp[4200] = "";
    nc_status st = lower_bundle_check_out(opt->out_dir, err);
    if (!st) st = modernbert_config_load(opt->model_dir, &c->cfg, err);
    int cfg_loaded = st == NC_OK;
    if (!st) st = plan(c, err);
    if (!st) st = hf_weights_open(opt->model_dir, &c->w, err);
    if (!st) {
        c->prefix =
            hf_weights_find(c->w, "model.embeddings.tok_embeddings.weight", NULL) ? "model." : "";
        st = nc_pool_new(opt->n_threads, &c->pool, err);
    }
    char *abs_src = st ? NULL : realpath(opt->model_dir, NULL);
    if (!st && !abs_src) st = nc_fail(err, NC_ERR_IO, "%s: %s", opt->model_dir, strerror(errno));
    if (!st) st = lower_bundle_make_tmp(opt->out_dir, tmp, sizeof tmp, err);
    if (!st) st = build(c, tmp, man, err);
    if (!st) st = lower_copy_file(opt->model_dir, tmp, "tokenizer.json", 0, err);
    if (!st) st = lower_copy_file(opt->model_dir, tmp, "tokenizer_config.json", 0, err);
    if (!st) st = lower_copy_file(opt->model_dir, tmp, "config.json", 1, err);
    if (!st) {
        const modernbert_config *q = &c->cfg;
        man->hidden_size = q->hidden_size;
        man->num_hidden_layers = q->num_hidden_layers;
        man->num_attention_heads = q->num_attention_heads;
        man->head_dim = q->head_dim;
        man->vocab_size = q->vocab_size;
        snprintf(man->source_dir, sizeof man->source_dir, "%s", abs_src);
        man->n_seqs = c->n_seqs;
        memcpy(man->seqs, c->seqs, sizeof man->seqs);
        man->n_batches = c->n_batches;
        memcpy(man->batches, c->batches, sizeof man->batches);
        man->crossings_per_call = crossings(q, c->seqs[c->n_seqs - 1]);
        man->fp16 = c->stats;
        man->palettize = c->opt->palettize;
        char mp[4300];
        snprintf(mp, sizeof mp, "%s/manifest.json", tmp);
        st = mb_manifest_write(man, mp, err);
    }
    if (!st) {
        rep->bundle_bytes = lower_tree_bytes(tmp);
        st = lower_bundle_publish(tmp, opt->out_dir, err);
    }
    if (st && tmp[0]) lower_remove_tree(tmp);
    if (!st) {
        rep->seconds = nc_now_s() - t0;
        rep->n_functions = man->program.n_fns;
        rep->crossings_per_call = man->crossings_per_call;
        rep->fp16 = c->stats;
        rep->palettize = c->pal;
    }
    free(abs_src);
    if (cfg_loaded) modernbert_config_free(&c->cfg);
    nc_pool_free(c->pool);
    hf_weights_close(c->w);
    free(man);
    free(c);
    return st;
}
