/* The compile driver (qwen3_compile.h): read the checkpoint tensor by tensor,
 * convert each layer's weights to fp16 in parallel, lower the layer, print
 * its program, describe it in the manifest; then the head, the tokenizer
 * files and the manifest; then one rename publishes the bundle. */
#define _XOPEN_SOURCE 700
#include "lower/qwen3_compile.h"

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
#include "bundle/forms_rules.h"
#include "lower/qwen35_compile.h"
#include "mil/print.h"
#include "models/family.h"

typedef struct compile_ctx {
    const lower_compile_options *opt;
    qwen3_config cfg; /* for Qwen3.5: the shape fields of cfg35 */
    lower_plan plan;
    int is35; /* a Qwen3.5 folder: layers by qwen35_compile.c */
    const model_family_row *family; /* Qwen3, Llama, Gemma 3 (NULL for Qwen3.5) */
    char prefix[32];                /* of the decoder's tensors ("model.") */
    qwen35_config cfg35;
    lower_q35_src src35;
    hf_weights *w;
    nc_pool *pool;
    char tmp[4096];
    lower_manifest man;
    lower_fp16_stats stats;
    lower_palette_stats pal;
    int show_progress;
    double t0;
} compile_ctx;

static void progress(compile_ctx *c, int done, int total) {
    if (!c->show_progress) return;
    int width = 30, fill = total ? done * width / total : width;
    fprintf(stderr, "\rcompile [");
    for (int i = 0; i < width; i++)
        fputc(i < fill ? '=' : ' ', stderr);
    fprintf(stderr, "] %d/%d programs, %.1f s", done, total, nc_now_s() - c->t0);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* Palettizes a projection when --palettize asks for it. */
static nc_status maybe_palettize(compile_ctx *c, lower_weight *w, const char *name, nc_error *err) {
    if (!c->opt->palettize.bits) return NC_OK;
    return lower_palettize(c->pool, w, &c->opt->palettize, name, &c->pal, err);
}

/* Converts tensor `name` into a fresh fp16 buffer held by w->data. */
static nc_status load_weight(compile_ctx *c, const char *name, int64_t d0, int64_t d1,
                             lower_weight *w, nc_error *err) {
    return lower_tensor_load_fp16(c->w, c->pool, c->opt->model_dir, name, d0, d1, &c->stats, w,
                                  err);
}

static nc_status emit(compile_ctx *c, mil_program *prog, const char *sub, int layer,
                      nc_error *err) {
    char path[4200], rel[64];
    snprintf(rel, sizeof rel, "%s/model.mil", sub);
    snprintf(path, sizeof path, "%s/%s", c->tmp, rel);
    nc_status st = mil_print_file(prog, path, err);
    lower_program_info *pi = &c->man.programs[c->man.n_programs++];
    /* the enumerated bucket form: an entry per bucket of each layer function */
    if (st == NC_OK && layer >= 0 && c->plan.forms.bucket_form == LOWER_BUCKETS_ENUMERATED)
        st = lower_describe_enumerated(prog, rel, layer, c->plan.seqs, c->plan.n_seqs, pi, err);
    else if (st == NC_OK)
        st = lower_describe_program(prog, rel, layer, pi, err);
    mil_program_free(prog);
    return st;
}

static nc_status compile_layer35(compile_ctx *c, int l, lower_weight *rope, nc_error *err) {
    char sub[32], dir[4200];
    snprintf(sub, sizeof sub, "layer_%02d", l);
    snprintf(dir, sizeof dir, "%s/%s", c->tmp, sub);
    mil_program *prog = NULL;
    nc_status st = lower_qwen35_layer_program(&c->src35, &c->plan, l, rope, dir, &prog, err);
    if (st == NC_OK) st = emit(c, prog, sub, l, err);
    char wdir[4300];
    snprintf(wdir, sizeof wdir, "%s/weights", dir);
    size_t cap = (size_t)c->plan.forms.max_program_bytes, bytes = lower_tree_bytes(wdir);
    if (st == NC_OK && cap && bytes > cap) /* a Qwen3.5 layer is one program */
        st = nc_fail(err, NC_ERR_UNSUPPORTED,
                     "--max-program-bytes %zu: the layer's program holds %zu bytes of weights "
                     "and a Qwen3.5 layer is not split",
                     cap, bytes);
    if (st != NC_OK) nc_fail_prefix(err, "layer %d", l);
    rope->val = NULL;
    return st;
}

/* Removes the programs emitted from index `first` on (their folders and
 * manifest entries). */
static void drop_programs(compile_ctx *c, int first) {
    while (c->man.n_programs > first) {
        char dir[4200];
        lower_program_info *pi = &c->man.programs[--c->man.n_programs];
        snprintf(dir, sizeof dir, "%s/%s", c->tmp, pi->path);
        char *slash = strrchr(dir, '/'); /* the program's folder, not model.mil */
        if (slash) *slash = 0;
        lower_remove_tree(dir);
        memset(pi, 0, sizeof *pi);
    }
}

/* The programs of layer l under `split` ((kernel, bucket) index pairs, -1
 * for all); *biggest: the largest weights/weight.bin among them. */
static nc_status emit_layer(compile_ctx *c, int l, lower_program_split split,
                            lower_layer_weights *w, lower_weight *rope, size_t *biggest,
                            nc_error *err) {
    nc_status st = NC_OK;
    *biggest = 0;
    /* the enumerated bucket form has one function per kernel: a program per
     * function is a program per kernel */
    if (split == LOWER_SPLIT_FUNCTION && c->plan.forms.bucket_form == LOWER_BUCKETS_ENUMERATED)
        split = LOWER_SPLIT_KERNEL;
    int nk = split == LOWER_SPLIT_LAYER ? 1 : lower_qwen3_kernels(&c->plan);
    int ns = split == LOWER_SPLIT_FUNCTION ? c->plan.n_seqs : 1;
    for (int k = 0; k < nk && st == NC_OK; k++)
        for (int s = 0; s < ns && st == NC_OK; s++) {
            char sub[64], dir[4200];
            if (split == LOWER_SPLIT_LAYER)
                snprintf(sub, sizeof sub, "layer_%02d", l);
            else if (split == LOWER_SPLIT_KERNEL)
                snprintf(sub, sizeof sub, "layer_%02d_%s", l, lower_qwen3_kernel_name(&c->plan, k));
            else
                snprintf(sub, sizeof sub, "layer_%02d_%s_s%d", l,
                         lower_qwen3_kernel_name(&c->plan, k), c->plan.seqs[s]);
            snprintf(dir, sizeof dir, "%s/%s", c->tmp, sub);
            mil_program *prog = NULL;
            /* a sliding-window layer (Gemma 3): its window for a cache, its own host inputs */
            lower_plan lp = c->plan;
            lp.local = qwen3_layer_sliding(&c->cfg, l);
            if (lp.local)
                lp.ctx = lower_qwen3_window(c->cfg.sliding_window, lp.ctx, lp.seqs[lp.n_seqs - 1]);
            st = lower_qwen3_layer_part(&lp, split == LOWER_SPLIT_LAYER ? -1 : k,
                                        split == LOWER_SPLIT_FUNCTION ? s : -1, w, rope, dir,
                                        &prog, err);
            if (st == NC_OK) st = emit(c, prog, sub, l, err);
            char wdir[4300];
            snprintf(wdir, sizeof wdir, "%s/weights", dir);
            size_t bytes = st == NC_OK ? lower_tree_bytes(wdir) : 0;
            if (bytes > *biggest) *biggest = bytes;
            /* each program has its own weight.bin */
            rope->val = NULL;
            lower_weight *all[] = {&w->q,          &w->k,         &w->v,
                                   &w->o,          &w->gate,      &w->up,
                                   &w->down,       &w->attn_norm, &w->mlp_norm,
                                   &w->q_norm,     &w->k_norm,    &w->out_gate,
                                   &w->post_attn_norm, &w->post_mlp_norm};
            for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
                lower_weight_forget(all[i]);
        }
    return st;
}

static nc_status compile_layer(compile_ctx *c, int l, lower_weight *rope, nc_error *err) {
    if (c->is35) return compile_layer35(c, l, rope, err);
    const qwen3_config *q = &c->cfg;
    int64_t D = q->hidden_size, hd = q->head_dim, I = q->intermediate_size;
    int64_t qd = (int64_t)q->num_attention_heads * hd, kvd = (int64_t)q->num_key_value_heads * hd;
    lower_layer_weights w;
    memset(&w, 0, sizeof w);
    lower_qwen3_layer_shapes(q, &w);
    int qk = q->qk_norm, sw = q->sandwich_norm; /* Llama: no q/k norms; Gemma 3: four norms */
    struct {
        lower_weight *w;
        const char *name;
        int64_t d0, d1;
        int used;
    } t[] = {{&w.q, "self_attn.q_proj.weight", qd, D, 1},
             {&w.k, "self_attn.k_proj.weight", kvd, D, 1},
             {&w.v, "self_attn.v_proj.weight", kvd, D, 1},
             {&w.o, "self_attn.o_proj.weight", D, qd, 1},
             {&w.gate, "mlp.gate_proj.weight", I, D, 1},
             {&w.up, "mlp.up_proj.weight", I, D, 1},
             {&w.down, "mlp.down_proj.weight", D, I, 1},
             {&w.attn_norm, "input_layernorm.weight", D, 0, 1},
             {&w.mlp_norm,
              sw ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight", D, 0, 1},
             {&w.q_norm, "self_attn.q_norm.weight", hd, 0, qk},
             {&w.k_norm, "self_attn.k_norm.weight", hd, 0, qk},
             {&w.post_attn_norm, "post_attention_layernorm.weight", D, 0, sw},
             {&w.post_mlp_norm, "post_feedforward_layernorm.weight", D, 0, sw}};
    int n = (int)(sizeof t / sizeof t[0]);
    nc_status st = NC_OK;
    for (int i = 0; i < n && st == NC_OK; i++) {
        char name[256];
        if (!t[i].used) continue;
        snprintf(name, sizeof name, "%slayers.%d.%s", c->prefix, l, t[i].name);
        st = load_weight(c, name, t[i].d0, t[i].d1, t[i].w, err);
        /* Gemma's norms scale by 1 + w: folded into the fp16 weight */
        if (st == NC_OK && !t[i].d1 && q->norm_plus_one) lower_weight_add_one(t[i].w);
        /* the grouped attention form: q's channels in (kv head, dim, group) order */
        if (st == NC_OK && c->plan.forms.attention == LOWER_ATTN_GROUPED &&
            (t[i].w == &w.q || t[i].w == &w.o))
            st = lower_qwen3_group_order(q, t[i].w, t[i].w == &w.q, err);
        if (st == NC_OK && t[i].d1) st = maybe_palettize(c, t[i].w, name, err); /* projections */
    }
    /* the program split, finer while a program is over --max-program-bytes */
    size_t cap = (size_t)c->plan.forms.max_program_bytes, biggest = 0;
    lower_program_split split = c->plan.forms.program_split;
    for (;;) {
        int first = c->man.n_programs;
        if (st == NC_OK) st = emit_layer(c, l, split, &w, rope, &biggest, err);
        if (st != NC_OK || !cap || biggest <= cap) break;
        if (split == LOWER_SPLIT_FUNCTION) {
            st = nc_fail(err, NC_ERR_UNSUPPORTED,
                         "--max-program-bytes %zu: a program of one kernel and bucket holds %zu "
                         "bytes of weights",
                         cap, biggest);
            break;
        }
        drop_programs(c, first);
        split = (lower_program_split)(split + 1);
    }
    if (st != NC_OK) nc_fail_prefix(err, "layer %d", l);
    for (int i = 0; i < n; i++) {
        free((void *)t[i].w->data);
        free(t[i].w->pal);
    }
    return st;
}


static nc_status compile_head(compile_ctx *c, nc_error *err) {
    const qwen3_config *q = &c->cfg;
    const lower_forms *fo = &c->plan.forms;
    int64_t D = q->hidden_size, V = q->vocab_size;
    int64_t max_rows = fo->head_rows > 0 ? fo->head_rows : LOWER_HEAD_ROWS_DEFAULT;
    lower_weight norm = {0}, chunks[LOWER_MAX_HEAD_CHUNKS];
    memset(chunks, 0, sizeof chunks);
    lower_weight_shape4(&norm, 1, D, 1, 1);
    if (c->is35) /* Qwen3.5's RMSNorm scales by 1 + w */
        NC_TRY(lower_qwen35_norm1p(&c->src35, c->man.final_norm_tensor, D, &norm, err));
    else
        NC_TRY(load_weight(c, c->man.final_norm_tensor, D, 0, &norm, err));
    if (!c->is35 && q->norm_plus_one) lower_weight_add_one(&norm); /* Gemma 3's, as Qwen3.5's */
    const st_tensor *t;
    nc_status st = lower_tensor_find(c->w, c->opt->model_dir, c->man.lm_head_tensor, V, D, &t, err);
    int n_chunks = (int)((V + max_rows - 1) / max_rows);
    if (n_chunks > LOWER_MAX_HEAD_CHUNKS) /* lower_forms_check refused it before */
        st = nc_fail(err, NC_ERR_UNSUPPORTED, "LM head: %d chunks", n_chunks);
    int64_t per = n_chunks ? (V + n_chunks - 1) / n_chunks : V;
    for (int i = 0; st == NC_OK && i < n_chunks; i++) {
        int64_t lo = i * per, rows = lo + per > V ? V - lo : per;
        nc_fp16 *buf = malloc((size_t)(rows * D) * sizeof *buf);
        if (!buf) {
            st = nc_fail(err, NC_ERR_NOMEM, "LM head: out of memory");
            break;
        }
        chunks[i].data = buf;
        lower_weight_shape4(&chunks[i], rows, D, 1, 1);
        c->man.head_rows[c->man.n_head_chunks++] = rows;
        st = lower_tensor_to_fp16(c->pool, t, (size_t)(lo * D), (size_t)(rows * D), buf, &c->stats,
                                  err);
        if (st == NC_OK) st = maybe_palettize(c, &chunks[i], "LM head", err);
    }
    /* one program, or one per chunk (each with the final norm: a few
     * hundred elementwise ops against a conv of millions of weights) */
    int per_chunk = fo->head_split == LOWER_HEAD_PER_CHUNK;
    for (int i = 0; st == NC_OK && i < (per_chunk ? n_chunks : 1); i++) {
        char sub[32], dir[4200];
        if (per_chunk)
            snprintf(sub, sizeof sub, "head_%02d", i);
        else
            snprintf(sub, sizeof sub, "head");
        snprintf(dir, sizeof dir, "%s/%s", c->tmp, sub);
        mil_program *prog = NULL;
        st = lower_qwen3_head_program(&c->plan, &norm, chunks + (per_chunk ? i : 0),
                                      per_chunk ? 1 : n_chunks, per_chunk ? i : 0, dir, &prog, err);
        if (st == NC_OK) st = emit(c, prog, sub, -1, err);
        lower_weight_forget(&norm);
    }
    free((void *)norm.data);
    for (int i = 0; i < n_chunks && i < LOWER_MAX_HEAD_CHUNKS; i++) {
        free((void *)chunks[i].data);
        free(chunks[i].pal);
    }
    return st;
}

static nc_status plan_buckets(compile_ctx *c, nc_error *err) {
    const lower_compile_options *o = c->opt;
    int max_pos = c->cfg.max_position_embeddings;
    int ctx = o->ctx > 0 ? o->ctx : (max_pos < 512 ? max_pos : 512) / 32 * 32;
    if (ctx < 32 || ctx % 32 || ctx > max_pos)
        return nc_fail(err, NC_ERR_INVALID,
                       "--ctx %d: must be a multiple of 32 in [32, %d] "
                       "(max_position_embeddings)",
                       ctx, max_pos);
    NC_TRY(lower_qwen3_check_ctx(ctx, err));
    lower_plan *p = &c->plan;
    p->kernels_per_layer = o->kernels_per_layer ? o->kernels_per_layer : 4;
    if (!lower_kernels_per_layer_valid(p->kernels_per_layer))
        return nc_fail(err, NC_ERR_INVALID, "--kernels-per-layer %d: give 4, 3, 2 or 1",
                       o->kernels_per_layer);
    p->cfg = &c->cfg;
    p->ctx = ctx;
    p->seqs[p->n_seqs++] = 32; /* decode: one token padded to 32 columns */
    static const int defaults[] = {64, 128};
    int n = o->n_seqs ? o->n_seqs : 2;
    for (int i = 0; i < n; i++) {
        int s = o->n_seqs ? o->seqs[i] : defaults[i];
        if (s < 32 || s % 32)
            return nc_fail(err, NC_ERR_INVALID, "--buckets: %d is not a multiple of 32", s);
        if (s > ctx) {
            if (o->n_seqs)
                return nc_fail(err, NC_ERR_INVALID, "--buckets: %d exceeds --ctx %d", s, ctx);
            continue;
        }
        if (s <= p->seqs[p->n_seqs - 1]) {
            if (s == p->seqs[p->n_seqs - 1]) continue;
            return nc_fail(err, NC_ERR_INVALID, "--buckets: sizes must ascend");
        }
        if (p->n_seqs == LOWER_MAX_BUCKETS)
            return nc_fail(err, NC_ERR_INVALID, "--buckets: at most %d sizes", LOWER_MAX_BUCKETS);
        p->seqs[p->n_seqs++] = s;
    }
    return NC_OK;
}

/* The model's side of the forms' rules (forms_rules.h). */
static lower_forms_model forms_model(int is35, const qwen3_config *cfg, int lm_head_on_cpu) {
    return (lower_forms_model){.recurrent = is35,
                               .windows = cfg->norm_plus_one, /* Gemma 3 */
                               .vocab = lm_head_on_cpu ? 0 : cfg->vocab_size};
}

nc_status lower_forms_model_of_dir(const char *dir, int lm_head_on_cpu, lower_forms_model *m,
                                   nc_error *err) {
    int is35 = qwen35_is_qwen35_dir(dir);
    qwen3_config *cfg = malloc(sizeof *cfg);
    qwen35_config *cfg35 = is35 ? malloc(sizeof *cfg35) : NULL;
    nc_status st = !cfg || (is35 && !cfg35) ? nc_fail(err, NC_ERR_NOMEM, "out of memory")
                   : is35 ? qwen35_config_load(dir, cfg35, err)
                          : model_family_qwen3_config_load(dir, cfg, err);
    if (!st && is35) qwen35_config_shape(cfg35, cfg);
    if (!st) *m = forms_model(is35, cfg, lm_head_on_cpu);
    free(cfg);
    free(cfg35);
    return st;
}

nc_status lower_qwen3_compile(const lower_compile_options *opt, lower_compile_report *rep,
                              nc_error *err) {
    compile_ctx *c = calloc(1, sizeof *c);
    if (!c) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    memset(rep, 0, sizeof *rep);
    c->opt = opt;
    c->t0 = nc_now_s();
    c->show_progress = opt->progress > 0 || (opt->progress < 0 && isatty(2));
    nc_status st = lower_bundle_check_out(opt->out_dir, err);
    c->is35 = qwen35_is_qwen35_dir(opt->model_dir);
    if (!st && c->is35) {
        st = qwen35_config_load(opt->model_dir, &c->cfg35, err);
        if (!st) qwen35_config_shape(&c->cfg35, &c->cfg);
        if (!st && opt->lm_head_on_cpu)
            st = nc_fail(err, NC_ERR_UNSUPPORTED,
                         "--lm-head cpu: a Qwen3.5 bundle keeps its head on the ANE (the host's "
                         "CPU head applies Qwen3's norm)");
    } else if (!st) { /* Qwen3, Llama, Gemma 3: the family's reader (models/family.h) */
        st = model_family_of_dir(opt->model_dir, &c->family, err);
        if (!st) st = model_family_qwen3_config_load(opt->model_dir, &c->cfg, err);
        if (!st && opt->lm_head_on_cpu && c->cfg.norm_plus_one)
            st = nc_fail(err, NC_ERR_UNSUPPORTED,
                         "--lm-head cpu: a Gemma 3 bundle keeps its head on the ANE (the host's "
                         "CPU head applies Qwen3's norm, without the final softcap)");
    }
    if (!st && (c->cfg.head_dim % 2 || c->cfg.num_attention_heads % c->cfg.num_key_value_heads))
        st = nc_fail(err, NC_ERR_UNSUPPORTED,
                     "%s: head_dim must be even and heads a multiple of "
                     "kv heads",
                     opt->model_dir);
    if (!st) st = plan_buckets(c, err);
    if (!st) st = hf_weights_open(opt->model_dir, &c->w, err);
    if (!st) st = nc_pool_new(opt->n_threads, &c->pool, err);
    c->src35 = (lower_q35_src){&c->cfg35,       c->w,      c->pool,
                               opt->model_dir,  &c->stats, (lower_q35_prefill_form)opt->q35_prefill,
                               &opt->palettize, &c->pal};
    int L = c->cfg.num_hidden_layers;
    c->plan.forms = opt->forms;
    lower_forms_model fm = forms_model(c->is35, &c->cfg, opt->lm_head_on_cpu);
    if (!st) st = lower_forms_check(&c->plan.forms, c->plan.kernels_per_layer, &fm, err);
    /* enough entries for every split (the enumerated form needs no more) */
    int per_layer = c->plan.forms.max_program_bytes ? lower_qwen3_kernels(&c->plan) * c->plan.n_seqs
                    : c->plan.forms.program_split == LOWER_SPLIT_LAYER ? 1
                    : c->plan.forms.program_split == LOWER_SPLIT_KERNEL
                        ? lower_qwen3_kernels(&c->plan)
                        : lower_qwen3_kernels(&c->plan) * c->plan.n_seqs;
    if (!st) {
        c->man.programs =
            calloc((size_t)(L * per_layer + LOWER_MAX_HEAD_CHUNKS) + 1, sizeof *c->man.programs);
        if (!c->man.programs) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    char *abs_src = st ? NULL : realpath(opt->model_dir, NULL);
    if (!st && !abs_src) st = nc_fail(err, NC_ERR_IO, "%s: %s", opt->model_dir, strerror(errno));
    if (!st) st = lower_bundle_make_tmp(opt->out_dir, c->tmp, sizeof c->tmp, err);
    lower_manifest *m = &c->man;
    if (!st) {
        m->cfg = c->cfg;
        m->family = c->family;
        m->ctx = c->plan.ctx;
        m->n_seqs = c->plan.n_seqs;
        memcpy(m->seqs, c->plan.seqs, sizeof m->seqs);
        m->lm_head_on_ane = !opt->lm_head_on_cpu;
        snprintf(m->source_dir, sizeof m->source_dir, "%s", abs_src);
        if (c->is35)
            snprintf(c->prefix, sizeof c->prefix, "%s", lower_qwen35_prefix(&c->cfg35));
        else /* "model.", or a multimodal Gemma 3's language model's */
            qwen3_tensor_prefix(c->w, &c->cfg, c->prefix, sizeof c->prefix);
        const char *pre = c->prefix;
        snprintf(m->embed_tensor, sizeof m->embed_tensor, "%sembed_tokens.weight", pre);
        snprintf(m->final_norm_tensor, sizeof m->final_norm_tensor, "%snorm.weight", pre);
        /* Qwen3.5 as its CPU loader: lm_head.weight whenever it is stored;
         * a multimodal Gemma 3's is its language model's */
        const char *head =
            c->cfg.multimodal && hf_weights_find(c->w, "language_model.lm_head.weight", NULL)
                ? "language_model.lm_head.weight"
                : "lm_head.weight";
        int own_head = !c->cfg.tie_word_embeddings ||
                       ((c->is35 || c->cfg.multimodal) && hf_weights_find(c->w, head, NULL));
        snprintf(m->lm_head_tensor, sizeof m->lm_head_tensor, "%s",
                 own_head ? head : m->embed_tensor);
        const st_tensor *e;
        st = lower_tensor_find(c->w, opt->model_dir, m->embed_tensor, c->cfg.vocab_size,
                               c->cfg.hidden_size, &e, err);
    }
    free(abs_src);
    int total = L + (opt->lm_head_on_cpu ? 0 : 1);
    lower_weight rope = {0};
    lower_weight_shape4(&rope, 1, 1, c->cfg.head_dim, c->cfg.head_dim);
    if (!st) {
        rope.data = c->is35 ? lower_rope_matrix_partial(c->cfg.head_dim, c->cfg35.rotary_dim)
                            : lower_rope_matrix(c->cfg.head_dim);
        if (!rope.data) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    for (int l = 0; l < L && !st; l++) {
        progress(c, l, total);
        st = compile_layer(c, l, &rope, err);
    }
    free((void *)rope.data);
    if (!st && !opt->lm_head_on_cpu) st = compile_head(c, err);
    if (!st) progress(c, total, total);
    if (!st) st = lower_copy_file(opt->model_dir, c->tmp, "tokenizer.json", 1, err);
    if (!st) st = lower_copy_file(opt->model_dir, c->tmp, "tokenizer_config.json", 0, err);
    if (!st) st = lower_copy_file(opt->model_dir, c->tmp, "generation_config.json", 0, err);
    if (!st) st = lower_copy_file(opt->model_dir, c->tmp, "config.json", 1, err);
    if (!st) {
        m->fp16 = c->stats;
        m->palettize = opt->palettize;
        m->kernels_per_layer = lower_qwen3_kernels(&c->plan); /* 3 with --kv-update host */
        m->forms = c->plan.forms;
        if (!m->forms.head_rows) m->forms.head_rows = LOWER_HEAD_ROWS_DEFAULT;
        int head_kernels = 0; /* one head program, or one per chunk */
        for (int p = 0; p < m->n_programs; p++)
            head_kernels += m->programs[p].layer < 0;
        m->kernels_per_token = m->kernels_per_layer * L + head_kernels;
        if (c->is35) {
            m->kernels_per_token = head_kernels;
            for (int l = 0; l < L; l++)
                m->kernels_per_token +=
                    lower_qwen35_layer_kernels(&c->cfg35, l, m->kernels_per_layer);
        }
        char mp[4200];
        snprintf(mp, sizeof mp, "%s/manifest.json", c->tmp);
        st = lower_manifest_write(m, mp, err);
    }
    if (!st) {
        rep->bundle_bytes = lower_tree_bytes(c->tmp);
        st = lower_bundle_publish(c->tmp, opt->out_dir, err);
    }
    if (st && c->tmp[0]) lower_remove_tree(c->tmp);
    if (!st) {
        rep->seconds = nc_now_s() - c->t0;
        rep->n_programs = m->n_programs;
        for (int p = 0; p < m->n_programs; p++) {
            /* an enumerated function has an entry per bucket: counted once */
            const lower_program_info *pi = &m->programs[p];
            for (int f = 0; f < pi->n_fns; f++)
                rep->n_functions += lower_manifest_fn(pi, pi->fns[f].name) == &pi->fns[f];
        }
        rep->kernels_per_token = m->kernels_per_token;
        rep->ctx = m->ctx;
        rep->fp16 = c->stats;
        rep->palettize = c->pal;
    }
    free(m->programs);
    nc_pool_free(c->pool);
    hf_weights_close(c->w);
    free(c);
    return st;
}
