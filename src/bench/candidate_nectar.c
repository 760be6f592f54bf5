/* In-process nectar backends as candidates.
 * cpu:DIR     the model's cpu engine (engine_open through the engine seam:
 *             Qwen3, or any family with a cpu row). Load = tokenizer +
 *             weights + one sequence; a decision = tokenize the item, prefill it from an
 *             empty cache and take the argmax of the last logits
 *             (tokenization is inside the decision: it is part of answering
 *             a request).
 * mil:BUNDLE  one MIL program (a .mil file, or a folder holding model.mil
 *             and its weights; BUNDLE#fn picks a function other than main)
 *             on the MIL interpreter in fp16 mode. Load =
 *             parse + prepare (weights read, constants folded) + binding
 *             every input to a fixed deterministic pattern; a decision = one
 *             run of its main function. The workload items are not used: the
 *             program's inputs are tensors, not text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "bench/candidate.h"
#include "engine/engine.h"
#include "mil/interp.h"
#include "mil/parse.h"
#include "text/tokenizer.h"

typedef struct cpu_impl {
    char dir[1024];
    engine *e;
    engine_seq *seq;
    tok_tokenizer *tok;
    float *logits;
    int vocab;
} cpu_impl;

static nc_status cpu_load(nc_candidate *c, nc_error *err) {
    cpu_impl *m = c->impl;
    const char *kind;
    NC_TRY(tok_load(m->dir, &m->tok, err));
    NC_TRY(engine_kind_for_decoder("cpu", m->dir, &kind, err));
    NC_TRY(engine_open(kind, m->dir, NULL, &m->e, err));
    NC_TRY(engine_seq_new(m->e, 0, &m->seq, err));
    m->vocab = m->e->n_vocab;
    m->logits = malloc((size_t)m->vocab * sizeof *m->logits);
    if (!m->logits) return nc_fail(err, NC_ERR_NOMEM, "cpu candidate: out of memory");
    return NC_OK;
}

static nc_status cpu_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    cpu_impl *m = c->impl;
    int32_t *ids = NULL;
    size_t n = 0;
    NC_TRY(tok_encode(m->tok, item->data, item->len, &ids, &n, err));
    if (n == 0) {
        free(ids);
        return nc_fail(err, NC_ERR_INVALID, "cpu candidate: an empty prompt has no next token");
    }
    engine_seq_truncate(m->e, m->seq, 0);
    nc_status st = engine_forward(m->e, m->seq, ids, (int)n, m->logits, err);
    free(ids);
    NC_TRY(st);
    int best = 0;
    for (int i = 1; i < m->vocab; i++)
        if (m->logits[i] > m->logits[best]) best = i;
    (void)best; /* the decision; its value is not judged here */
    return NC_OK;
}

static void cpu_unload(nc_candidate *c) {
    cpu_impl *m = c->impl;
    if (!m) return;
    free(m->logits);
    if (m->seq) engine_seq_free(m->e, m->seq);
    engine_close(m->e);
    if (m->tok) tok_free(m->tok);
    free(m);
    c->impl = NULL;
}

static const nc_candidate_ops cpu_ops = {cpu_load, NULL, cpu_run, cpu_unload};

/* --- mil:BUNDLE ----------------------------------------------------------- */

typedef struct mil_impl {
    char path[1024]; /* the .mil file */
    char fn[128];    /* the function to run ("" = main or the only one) */
    mil_program *prog;
    mil_interp *interp;
} mil_impl;

/* Binds one tensor input: floats get sin(0.1 i) (values in [-1, 1], finite in
 * fp16), integers and bools get 0, so every run computes the same thing. */
static nc_status bind_input(mil_impl *m, const mil_var *v, nc_error *err) {
    const mil_type *t = v->type;
    if (!t || t->kind != MIL_TYPE_TENSOR)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: input '%s' is not a tensor", m->path, v->name);
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "%s: input '%s' has an unknown dimension; give the program fixed shapes",
                           m->path, v->name);
        if (t->dims[d] > 0 && n > ((size_t)1 << 31) / (size_t)t->dims[d])
            return nc_fail(err, NC_ERR_RANGE, "%s: input '%s' is too large", m->path, v->name);
        n *= (size_t)t->dims[d];
    }
    int is_float = t->dtype == MIL_DT_FP16 || t->dtype == MIL_DT_FP32 || t->dtype == MIL_DT_FP64 ||
                   t->dtype == MIL_DT_BF16;
    if (is_float) {
        float *x = malloc((n ? n : 1) * sizeof *x);
        if (!x) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", m->path);
        for (size_t i = 0; i < n; i++)
            x[i] = (float)sin(0.1 * (double)i);
        nc_status st =
            mil_interp_set_input(m->interp, v->name, MIL_DT_FP32, t->rank, t->dims, x, err);
        free(x);
        return st;
    }
    int32_t *z = calloc(n ? n : 1, sizeof *z);
    if (!z) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", m->path);
    nc_status st = mil_interp_set_input(m->interp, v->name, MIL_DT_INT32, t->rank, t->dims, z, err);
    free(z);
    return st;
}

static nc_status mil_load(nc_candidate *c, nc_error *err) {
    mil_impl *m = c->impl;
    NC_TRY(mil_parse_file(m->path, &m->prog, err));
    NC_TRY(mil_interp_new(m->prog, m->fn[0] ? m->fn : NULL, MIL_INTERP_FP16, &m->interp, err));
    const mil_function *fn = mil_interp_function(m->interp);
    for (int i = 0; i < fn->n_inputs; i++) {
        if (fn->inputs[i]->type && fn->inputs[i]->type->kind == MIL_TYPE_STATE) continue;
        NC_TRY(bind_input(m, fn->inputs[i], err));
    }
    return NC_OK;
}

static nc_status mil_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    (void)item;
    return mil_interp_run(((mil_impl *)c->impl)->interp, err);
}

static void mil_unload(nc_candidate *c) {
    mil_impl *m = c->impl;
    if (!m) return;
    if (m->interp) mil_interp_free(m->interp);
    if (m->prog) mil_program_free(m->prog);
    free(m);
    c->impl = NULL;
}

static const nc_candidate_ops mil_ops = {mil_load, NULL, mil_run, mil_unload};

static nc_status mil_init(nc_candidate *c, const char *arg, nc_error *err) {
    if (!*arg)
        return nc_fail(err, NC_ERR_INVALID, "candidate '%s': mil:PATH needs a .mil file or folder",
                       c->spec);
    mil_impl *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "candidate: out of memory");
    c->impl = m;
    c->ops = &mil_ops;
    /* PATH#FUNCTION picks a function other than main */
    char where[1024];
    const char *hash = strrchr(arg, '#');
    size_t len = hash ? (size_t)(hash - arg) : strlen(arg);
    if (len >= sizeof where || (hash && strlen(hash + 1) >= sizeof m->fn))
        return nc_fail(err, NC_ERR_RANGE, "candidate '%s': path too long", c->spec);
    memcpy(where, arg, len);
    where[len] = '\0';
    if (hash) snprintf(m->fn, sizeof m->fn, "%s", hash + 1);
    int n = nc_is_dir(where) ? snprintf(m->path, sizeof m->path, "%s/model.mil", where)
                             : snprintf(m->path, sizeof m->path, "%s", where);
    if (n < 0 || (size_t)n >= sizeof m->path)
        return nc_fail(err, NC_ERR_RANGE, "candidate '%s': path too long", c->spec);
    return nc_candidate_set_model(c, where, err);
}

nc_status nc_candidate_nectar_init(nc_candidate *c, const char *kind, const char *arg,
                                   nc_error *err) {
    if (!strcmp(kind, "mil")) return mil_init(c, arg, err);
    if (!*arg)
        return nc_fail(err, NC_ERR_INVALID, "candidate '%s': cpu:DIR needs a model folder",
                       c->spec);
    if (strlen(arg) >= sizeof((cpu_impl *)0)->dir)
        return nc_fail(err, NC_ERR_RANGE, "candidate '%s': path too long", c->spec);
    cpu_impl *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "candidate: out of memory");
    snprintf(m->dir, sizeof m->dir, "%s", arg);
    c->impl = m;
    c->ops = &cpu_ops;
    NC_TRY(nc_candidate_set_model(c, arg, err));
    return NC_OK;
}
