/* qwen3-mil: a lowered Qwen3 bundle (nectar compile) run by the MIL
 * interpreter in fp16 mode -- the numerics the ANE is asked for, on any
 * machine. The programs and their prepared interpreters belong to the
 * engine; a sequence is its KV cache ([L][kvd * ctx] each for K and V, fp16
 * values held as floats) and its position, bound into the kernels by name
 * on every call, so any number of sequences share one set of interpreters.
 *
 * A layer runs the functions its program lists for the chunk's bucket, in
 * manifest order, as a dataflow over named buffers: an input is bound from
 * the buffer of its name (the host's x, rope_cos, rope_sin, attn_mask,
 * kv_write, the sequence's k_cache / v_cache, or an earlier kernel's
 * output such as q); an output NAME_out replaces buffer NAME, any other
 * output becomes a buffer for the kernels after it. So 4, 2 or 1 kernels
 * per layer run through the same loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engines.h"
#include "engine/qwen3_bundle_host.h"
#include "mil/interp.h"
#include "mil/parse.h"

#define MAX_NAMED 48

typedef struct mil_model {
    qb_host h;
    int L;
    mil_program **progs; /* per manifest program */
    int *layer_prog;     /* layer -> program index */
    int head_prog;       /* -1: head on the CPU */
    mil_interp ***its;   /* [program][function], prepared on first use */
    engine_layer_hook hook;
    void *hook_user;
} mil_model;

typedef struct mil_seq {
    qb_seq base;    /* the position; first */
    float *kc, *vc; /* [L][kvd * ctx] */
} mil_seq;

/* A name -> values table for one layer's dataflow. */
typedef struct named {
    const char *name;
    const float *data;
    size_t count;
    float *owned_dst; /* where NAME_out is copied (host / cache buffers), or NULL */
} named;

typedef struct layer_env {
    named v[MAX_NAMED];
    int n;
} layer_env;

static void env_put(layer_env *e, const char *name, const float *data, size_t count, float *dst) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->v[i].name, name)) {
            e->v[i].data = data;
            e->v[i].count = count;
            if (dst) e->v[i].owned_dst = dst;
            return;
        }
    if (e->n < MAX_NAMED) e->v[e->n++] = (named){name, data, count, dst};
}

static named *env_get(layer_env *e, const char *name) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->v[i].name, name)) return &e->v[i];
    return NULL;
}

static void mil_close(engine *e) {
    mil_model *m = e->impl;
    if (!m) return;
    for (int p = 0; m->progs && p < m->h.man.n_programs; p++) {
        for (int f = 0; m->its && m->its[p] && f < m->h.man.programs[p].n_fns; f++)
            mil_interp_free(m->its[p][f]);
        if (m->its) free(m->its[p]);
        mil_program_free(m->progs[p]);
    }
    free(m->its);
    free(m->progs);
    free(m->layer_prog);
    qb_host_free(&m->h);
    free(m);
    e->impl = NULL;
}

static size_t io_count(const lower_io *io) {
    size_t n = 1;
    for (int i = 0; i < io->rank; i++)
        n *= (size_t)io->shape[i];
    return n;
}

static nc_status interp_of(mil_model *m, int prog, int fn, mil_interp **out, nc_error *err) {
    mil_interp **slot = &m->its[prog][fn];
    if (!*slot) {
        NC_TRY(mil_interp_new(m->progs[prog], m->h.man.programs[prog].fns[fn].name, MIL_INTERP_FP16,
                              slot, err));
        mil_interp_set_pool(*slot, m->h.pool);
    }
    *out = *slot;
    return NC_OK;
}

/* Runs function fn of program prog over env: inputs by name, outputs back. */
static nc_status run_fn(mil_model *m, int prog, int fn, layer_env *env, nc_error *err) {
    const lower_fn_info *f = &m->h.man.programs[prog].fns[fn];
    mil_interp *it;
    NC_TRY(interp_of(m, prog, fn, &it, err));
    for (int i = 0; i < f->n_in; i++) {
        const lower_io *io = &f->in[i];
        named *v = env_get(env, io->name);
        if (!v || !v->data)
            return nc_fail(err, NC_ERR_FORMAT, "%s: function %s takes '%s', which nothing provides",
                           m->h.dir, f->name, io->name);
        if (v->count != io_count(io))
            return nc_fail(err, NC_ERR_FORMAT,
                           "function %s: input '%s' holds %zu values, the host has %zu", f->name,
                           io->name, io_count(io), v->count);
        NC_TRY(mil_interp_set_input(it, io->name, MIL_DT_FP32, io->rank, io->shape, v->data, err));
    }
    NC_TRY(mil_interp_run(it, err));
    for (int i = 0; i < f->n_out; i++) {
        const lower_io *io = &f->out[i];
        mil_interp_view view;
        NC_TRY(mil_interp_get(it, io->name, &view, err));
        if (!view.f32 || view.count != io_count(io))
            return nc_fail(err, NC_ERR_FORMAT,
                           "function %s: output '%s' has %zu values, expected %zu", f->name,
                           io->name, view.count, io_count(io));
        size_t len = strlen(io->name);
        if (len > 4 && !strcmp(io->name + len - 4, "_out")) {
            char base[48];
            snprintf(base, sizeof base, "%.*s", (int)(len - 4), io->name);
            named *dst = env_get(env, base);
            if (!dst || !dst->owned_dst || dst->count != view.count)
                return nc_fail(err, NC_ERR_FORMAT, "function %s: output '%s' updates no buffer",
                               f->name, io->name);
            memcpy(dst->owned_dst, view.f32, view.count * sizeof(float));
            dst->data = dst->owned_dst;
        } else {
            env_put(env, io->name, view.f32, view.count, NULL);
        }
    }
    return NC_OK;
}

static nc_status run_layer(mil_model *m, mil_seq *s, int l, int S, nc_error *err) {
    const qwen3_config *c = &m->h.man.cfg;
    size_t D = (size_t)c->hidden_size, hd = (size_t)c->head_dim, ctx = (size_t)m->h.man.ctx;
    size_t kvd = (size_t)c->num_key_value_heads * hd;
    float *kc = s->kc + (size_t)l * kvd * ctx, *vc = s->vc + (size_t)l * kvd * ctx;
    layer_env env = {0};
    env_put(&env, "x", m->h.x, D * S, m->h.x);
    env_put(&env, "rope_cos", m->h.cs, hd * S, NULL);
    env_put(&env, "rope_sin", m->h.sn, hd * S, NULL);
    env_put(&env, "attn_mask", m->h.mask, (size_t)S * ctx, NULL);
    env_put(&env, "kv_write", m->h.wr, ctx, NULL);
    env_put(&env, "k_cache", kc, kvd * ctx, kc);
    env_put(&env, "v_cache", vc, kvd * ctx, vc);
    int prog = m->layer_prog[l], n_run = 0;
    const lower_program_info *pi = &m->h.man.programs[prog];
    for (int f = 0; f < pi->n_fns; f++) {
        if (pi->fns[f].seq != S) continue;
        NC_TRY(run_fn(m, prog, f, &env, err));
        n_run++;
    }
    if (!n_run)
        return nc_fail(err, NC_ERR_FORMAT, "%s: %s has no function for bucket %d", m->h.dir,
                       pi->path, S);
    return NC_OK;
}

static nc_status head_ane(mil_model *m, int col, int S, float *logits, nc_error *err) {
    size_t D = (size_t)m->h.man.cfg.hidden_size, W = LOWER_HEAD_SEQ;
    const lower_program_info *pi = &m->h.man.programs[m->head_prog];
    char name[32];
    snprintf(name, sizeof name, "head_s%d", LOWER_HEAD_SEQ);
    int fn = -1;
    for (int f = 0; f < pi->n_fns; f++)
        if (!strcmp(pi->fns[f].name, name)) fn = f;
    if (fn < 0)
        return nc_fail(err, NC_ERR_NOT_FOUND, "%s: the manifest lists no function %s", m->h.dir,
                       name);
    /* the token alone in column 0 of the head's 32-wide input */
    float *hx = m->h.hx;
    memset(hx, 0, D * W * sizeof(float));
    for (size_t d = 0; d < D; d++)
        hx[d * W] = m->h.x[d * S + col];
    layer_env env = {0};
    env_put(&env, "x", hx, D * W, NULL);
    NC_TRY(run_fn(m, m->head_prog, fn, &env, err));
    int64_t off = 0;
    for (int i = 0; i < m->h.man.n_head_chunks; i++) {
        snprintf(name, sizeof name, "logits_%d", i);
        int64_t rows = m->h.man.head_rows[i];
        named *v = env_get(&env, name);
        if (!v || v->count != (size_t)rows * W || off + rows > m->h.man.cfg.vocab_size)
            return nc_fail(err, NC_ERR_FORMAT, "%s: head output %s is missing or misshapen",
                           m->h.dir, name);
        for (int64_t r = 0; r < rows; r++)
            logits[off + r] = v->data[(size_t)r * W];
        off += rows;
    }
    if (off != m->h.man.cfg.vocab_size)
        return nc_fail(err, NC_ERR_FORMAT, "%s: head chunks cover %lld of %d rows", m->h.dir,
                       (long long)off, m->h.man.cfg.vocab_size);
    return NC_OK;
}

static nc_status run_chunk(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                           nc_error *err) {
    mil_model *m = user;
    for (int l = 0; l < m->L; l++) {
        NC_TRY(run_layer(m, (mil_seq *)seq, l, S, err));
        if (m->hook) {
            qb_host_rows(&m->h, m->h.x, n, p, S);
            m->hook(m->hook_user, l, m->h.rows, n, m->h.man.cfg.hidden_size);
        }
    }
    if (!logits) return NC_OK;
    int col = (p + n - 1) % S;
    if (!m->h.man.lm_head_on_ane) {
        qb_host_head_cpu(&m->h, m->h.x, col, S, logits);
        return NC_OK;
    }
    return head_ane(m, col, S, logits, err);
}

static nc_status mil_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    (void)ctx; /* the bundle fixes its context (engine_open checked a wanted one) */
    mil_model *m = e->impl;
    const qwen3_config *c = &m->h.man.cfg;
    size_t n = (size_t)m->L * c->num_key_value_heads * c->head_dim * m->h.man.ctx;
    mil_seq *s = calloc(1, sizeof *s);
    if (s) s->kc = calloc(n, sizeof(float));
    if (s && s->kc) s->vc = calloc(n, sizeof(float));
    if (!s || !s->kc || !s->vc) {
        if (s) free(s->kc);
        free(s);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the KV cache (ctx %d)", m->h.dir,
                       m->h.man.ctx);
    }
    *out = (engine_seq *)s;
    return NC_OK;
}

static void mil_seq_free(engine *e, engine_seq *seq) {
    (void)e;
    mil_seq *s = (mil_seq *)seq;
    free(s->kc);
    free(s->vc);
    free(s);
}

/* The interpreter has no batch across caches: item after item. */
static nc_status mil_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    (void)err;
    mil_model *m = e->impl;
    return qb_host_step(&m->h, items, n_items, run_chunk, m);
}

static void mil_set_hook(engine *e, engine_layer_hook hook, void *user) {
    mil_model *m = e->impl;
    m->hook = hook;
    m->hook_user = user;
}

static const engine_ops mil_ops = {
    .seq_new = mil_seq_new,
    .seq_free = mil_seq_free,
    .seq_pos = qb_seq_pos,
    .seq_truncate = qb_seq_truncate,
    .step = mil_step,
    .set_layer_hook = mil_set_hook,
    .close = mil_close,
};

nc_status engine_open_qwen3_mil(const char *dir, const engine_options *opt, engine *e,
                                nc_error *err) {
    mil_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->impl = m;
    e->ops = &mil_ops;
    m->head_prog = -1;
    NC_TRY(qb_host_open(&m->h, dir, opt->n_threads, err));
    const lower_manifest *man = &m->h.man;
    m->L = man->cfg.num_hidden_layers;
    m->progs = calloc((size_t)man->n_programs, sizeof *m->progs);
    m->its = calloc((size_t)man->n_programs, sizeof *m->its);
    m->layer_prog = malloc((size_t)m->L * sizeof *m->layer_prog);
    if (!m->progs || !m->its || !m->layer_prog) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int l = 0; l < m->L; l++)
        m->layer_prog[l] = -1;
    for (int p = 0; p < man->n_programs; p++) {
        const lower_program_info *pi = &man->programs[p];
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dir, pi->path);
        NC_TRY(mil_parse_file(path, &m->progs[p], err));
        m->its[p] = calloc((size_t)pi->n_fns + 1, sizeof *m->its[p]);
        if (!m->its[p]) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
        if (pi->layer >= 0 && pi->layer < m->L) m->layer_prog[pi->layer] = p;
        if (pi->layer < 0) m->head_prog = p;
    }
    for (int l = 0; l < m->L; l++)
        if (m->layer_prog[l] < 0)
            return nc_fail(err, NC_ERR_FORMAT, "%s: no program for layer %d", dir, l);
    if (man->lm_head_on_ane && m->head_prog < 0)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: the manifest puts the LM head on the ANE but lists no head program",
                       dir);
    NC_TRY(engine_bundle_fill(e, dir, man, opt, err));
    e->kv_bytes_per_token *= 2; /* fp16 values held as floats */
    e->n_threads = nc_pool_threads(m->h.pool);
    return NC_OK;
}
