/* The interpreter side of a bundle (bundle_mil.h): programs, interpreters,
 * the named-buffer dataflow of one function, the head. */
#include "engine/bundle_mil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/parse.h"

void bm_env_put(bm_env *e, const char *name, const float *data, size_t count, float *dst) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->v[i].name, name)) {
            e->v[i].data = data;
            e->v[i].count = count;
            if (dst) e->v[i].owned_dst = dst;
            return;
        }
    if (e->n < BM_MAX_NAMED) e->v[e->n++] = (bm_named){name, data, count, dst};
}

static bm_named *env_get(bm_env *e, const char *name) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->v[i].name, name)) return &e->v[i];
    return NULL;
}

void bm_free(bm_model *m) {
    for (int p = 0; m->progs && p < m->h.man.n_programs; p++) {
        for (int f = 0; m->its && m->its[p] && f < m->h.man.programs[p].n_fns; f++)
            mil_interp_free(m->its[p][f]);
        if (m->its) free(m->its[p]);
        mil_program_free(m->progs[p]);
    }
    free(m->its);
    free(m->progs);
    free(m->layer_prog);
    db_host_free(&m->h);
    memset(m, 0, sizeof *m);
}

static nc_status interp_of(bm_model *m, int prog, int fn, mil_interp **out, nc_error *err) {
    mil_interp **slot = &m->its[prog][fn];
    if (!*slot) {
        NC_TRY(mil_interp_new(m->progs[prog], m->h.man.programs[prog].fns[fn].name, MIL_INTERP_FP16,
                              slot, err));
        mil_interp_set_pool(*slot, m->h.pool);
    }
    *out = *slot;
    return NC_OK;
}

/* --kv-update host: after the function that made k_new and v_new, the
 * host writes them into the caches the next function reads. */
static void host_kv_update(bm_model *m, const lower_fn_info *f, bm_env *env) {
    static const char *const pairs[2][2] = {{"k_new", "k_cache"}, {"v_new", "v_cache"}};
    for (int i = 0; i < 2; i++) {
        if (!lower_fn_io(f, pairs[i][0], 1)) return;
        bm_named *fresh = env_get(env, pairs[i][0]), *cache = env_get(env, pairs[i][1]);
        if (!fresh || !cache || !cache->owned_dst || !f->seq) continue;
        size_t C = fresh->count / (size_t)f->seq;
        if (!C) continue;
        db_host_kv_write(&m->h, cache->owned_dst, cache->count / C, fresh->data, C, f->seq);
        cache->data = cache->owned_dst;
    }
}

nc_status bm_run_fn(bm_model *m, int prog, int fn, bm_env *env, nc_error *err) {
    const lower_fn_info *f = &m->h.man.programs[prog].fns[fn];
    mil_interp *it;
    NC_TRY(interp_of(m, prog, fn, &it, err));
    for (int i = 0; i < f->n_in; i++) {
        const lower_io *io = &f->in[i];
        bm_named *v = env_get(env, io->name);
        if (!v || !v->data)
            return nc_fail(err, NC_ERR_FORMAT, "%s: function %s takes '%s', which nothing provides",
                           m->h.dir, f->name, io->name);
        if (v->count != db_io_count(io))
            return nc_fail(err, NC_ERR_FORMAT,
                           "function %s: input '%s' holds %zu values, the host has %zu", f->name,
                           io->name, db_io_count(io), v->count);
        NC_TRY(mil_interp_set_input(it, io->name, MIL_DT_FP32, io->rank, io->shape, v->data, err));
    }
    NC_TRY(mil_interp_run(it, err));
    for (int i = 0; i < f->n_out; i++) {
        const lower_io *io = &f->out[i];
        mil_interp_view view;
        NC_TRY(mil_interp_get(it, io->name, &view, err));
        if (!view.f32 || view.count != db_io_count(io))
            return nc_fail(err, NC_ERR_FORMAT,
                           "function %s: output '%s' has %zu values, expected %zu", f->name,
                           io->name, view.count, db_io_count(io));
        size_t len = strlen(io->name);
        if (len > 4 && !strcmp(io->name + len - 4, "_out")) {
            char base[48];
            snprintf(base, sizeof base, "%.*s", (int)(len - 4), io->name);
            bm_named *dst = env_get(env, base);
            if (!dst || !dst->owned_dst || dst->count != view.count)
                return nc_fail(err, NC_ERR_FORMAT, "function %s: output '%s' updates no buffer",
                               f->name, io->name);
            memcpy(dst->owned_dst, view.f32, view.count * sizeof(float));
            dst->data = dst->owned_dst;
        } else {
            bm_env_put(env, io->name, view.f32, view.count, NULL);
        }
    }
    if (m->h.man.forms.kv_update == LOWER_KV_HOST) host_kv_update(m, f, env);
    return NC_OK;
}

nc_status bm_run_named(bm_model *m, int prog, const char *name, bm_env *env, nc_error *err) {
    const lower_program_info *pi = &m->h.man.programs[prog];
    for (int f = 0; f < pi->n_fns; f++)
        if (!strcmp(pi->fns[f].name, name)) return bm_run_fn(m, prog, f, env, err);
    return nc_fail(err, NC_ERR_NOT_FOUND, "%s: %s lists no function %s", m->h.dir, pi->path, name);
}

nc_status bm_run_layer(bm_model *m, int l, int S, bm_env *env, nc_error *err) {
    const lower_manifest *man = &m->h.man;
    int n_run = 0;
    for (int p = 0; p < man->n_programs; p++) {
        const lower_program_info *pi = &man->programs[p];
        for (int f = 0; pi->layer == l && f < pi->n_fns; f++) {
            if (pi->fns[f].seq != S) continue;
            NC_TRY(bm_run_fn(m, p, f, env, err));
            n_run++;
        }
    }
    if (!n_run)
        return nc_fail(err, NC_ERR_FORMAT, "%s: layer %d has no function for bucket %d", m->h.dir,
                       l, S);
    return NC_OK;
}

static nc_status head_ane(bm_model *m, int col, int S, float *logits, nc_error *err) {
    size_t D = (size_t)m->h.man.cfg.hidden_size, W = LOWER_HEAD_SEQ;
    char name[32];
    /* the token alone in column 0 of the head's 32-wide input */
    float *hx = m->h.hx;
    memset(hx, 0, D * W * sizeof(float));
    for (size_t d = 0; d < D; d++)
        hx[d * W] = m->h.x[d * S + col];
    bm_env env = {0};
    bm_env_put(&env, "x", hx, D * W, NULL);
    snprintf(name, sizeof name, "head_s%d", LOWER_HEAD_SEQ);
    for (int p = 0; p < m->h.man.n_programs; p++) /* one, or one per chunk */
        if (m->h.man.programs[p].layer < 0) NC_TRY(bm_run_named(m, p, name, &env, err));
    int64_t off = 0;
    for (int i = 0; i < m->h.man.n_head_chunks; i++) {
        snprintf(name, sizeof name, "logits_%d", i);
        int64_t rows = m->h.man.head_rows[i];
        bm_named *v = env_get(&env, name);
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

nc_status bm_head(bm_model *m, int col, int S, float *logits, nc_error *err) {
    if (!m->h.man.lm_head_on_ane) {
        db_host_head_cpu(&m->h, m->h.x, col, S, logits);
        return NC_OK;
    }
    return head_ane(m, col, S, logits, err);
}

void bm_set_layer_hook(engine *e, engine_layer_hook hook, void *user) {
    bm_model *m = e->impl;
    m->hook = hook;
    m->hook_user = user;
}

nc_status bm_open(bm_model *m, const char *dir, const model_family_row *family, int n_threads,
                  nc_error *err) {
    memset(m, 0, sizeof *m);
    m->head_prog = -1;
    NC_TRY(db_host_open(&m->h, dir, family, n_threads, err));
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
        if (pi->layer < 0 && m->head_prog < 0) m->head_prog = p;
    }
    for (int l = 0; l < m->L; l++)
        if (m->layer_prog[l] < 0)
            return nc_fail(err, NC_ERR_FORMAT, "%s: no program for layer %d", dir, l);
    if (man->lm_head_on_ane && m->head_prog < 0)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: the manifest puts the LM head on the ANE but lists no head program",
                       dir);
    return NC_OK;
}
