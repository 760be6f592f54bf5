/* The host side of encoder bundles (modernbert_bundle_host.h). The host lays
 * embedding rows out as [B, D, 1, L] columns, builds the additive masks
 * [b, key, 0, query], has the island run the (B, L) function (the fp16
 * interpreter here, or a runner set from above) and reads `hidden` back. */
#include "engine/modernbert_bundle_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "bundle/modernbert_manifest.h"
#include "lower/modernbert_lower.h"
#include "mil/interp.h"
#include "mil/parse.h"

struct mb_run {
    mb_manifest man;
    modernbert_model *host;
    mil_program *prog;
    mil_interp *fns[LOWER_MAX_FUNCS]; /* prepared on first use, by manifest order */
    nc_pool *pool;
    long crossings;
    mb_island_fn island; /* NULL: the interpreter */
    void *island_user;
};

nc_status mb_run_open(const char *bundle, int n_threads, mb_run **out, nc_error *err) {
    mb_run *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = mb_manifest_read(bundle, &m->man, err);
    if (!st) st = modernbert_load(m->man.source_dir, n_threads, &m->host, err);
    if (!st) {
        const modernbert_config *c = modernbert_model_config(m->host);
        if (c->hidden_size != m->man.hidden_size ||
            c->num_hidden_layers != m->man.num_hidden_layers ||
            c->num_attention_heads != m->man.num_attention_heads ||
            c->vocab_size != m->man.vocab_size)
            st = nc_fail(err, NC_ERR_FORMAT,
                         "%s: the bundle does not match its checkpoint %s "
                         "(recompile it)",
                         bundle, m->man.source_dir);
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", bundle, m->man.program.path);
    if (!st) st = mil_parse_file(path, &m->prog, err);
    if (!st) st = nc_pool_new(n_threads, &m->pool, err);
    if (st) {
        mb_run_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

void mb_run_free(mb_run *m) {
    if (!m) return;
    for (int i = 0; i < LOWER_MAX_FUNCS; i++)
        mil_interp_free(m->fns[i]);
    mil_program_free(m->prog);
    modernbert_free(m->host);
    nc_pool_free(m->pool);
    free(m);
}

const modernbert_config *mb_run_config(const mb_run *m) {
    return modernbert_model_config(m->host);
}

modernbert_model *mb_run_host(mb_run *m) {
    return m->host;
}

const mil_program *mb_run_program(const mb_run *m) {
    return m->prog;
}

long mb_run_crossings(const mb_run *m) {
    return m->crossings;
}

void mb_run_set_island(mb_run *m, mb_island_fn run, void *user) {
    m->island = run;
    m->island_user = user;
}

/* The interpreter of function (batch, seq), prepared once. */
static nc_status function_for(mb_run *m, int batch, int seq, mil_interp **out, nc_error *err) {
    char name[64];
    mb_lower_fn_name(name, sizeof name, batch, seq);
    for (int i = 0; i < m->man.program.n_fns; i++) {
        if (strcmp(m->man.program.fns[i].name, name)) continue;
        if (!m->fns[i]) {
            NC_TRY(mil_interp_new(m->prog, name, MIL_INTERP_FP16, &m->fns[i], err));
            mil_interp_set_pool(m->fns[i], m->pool);
        }
        *out = m->fns[i];
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_FORMAT, "bundle: function %s is missing", name);
}

/* The interpreter as the island (mb_island_fn). */
static nc_status interp_island(void *user, int B, int L, const float *x, const float *mg,
                               const float *ml, float *const *out, nc_error *err) {
    mb_run *m = user;
    const modernbert_config *c = mb_run_config(m);
    size_t nx = (size_t)B * c->hidden_size * L;
    mil_interp *it = NULL;
    NC_TRY(function_for(m, B, L, &it, err));
    int64_t xs[4] = {B, c->hidden_size, 1, L}, ms[4] = {B, L, 1, L};
    NC_TRY(mil_interp_set_input(it, "x", MIL_DT_FP32, 4, xs, x, err));
    NC_TRY(mil_interp_set_input(it, "mask_global", MIL_DT_FP32, 4, ms, mg, err));
    if (ml) NC_TRY(mil_interp_set_input(it, "mask_local", MIL_DT_FP32, 4, ms, ml, err));
    NC_TRY(mil_interp_run(it, err));
    for (int k = 0; k < c->num_hidden_layers; k++) {
        if (!out[k]) continue;
        char var[32] = "hidden";
        if (k < c->num_hidden_layers - 1) mb_lower_layer_var(var, sizeof var, k);
        mil_interp_view v;
        NC_TRY(mil_interp_get(it, var, &v, err));
        if (v.count != nx || !v.f32)
            return nc_fail(err, NC_ERR_FORMAT, "bundle: %s has the wrong shape", var);
        memcpy(out[k], v.f32, nx * sizeof *out[k]);
    }
    return NC_OK;
}

/* 1 when function (B, L) takes mask_local (the manifest lists its inputs). */
static int takes_mask_local(const mb_run *m, int B, int L) {
    char name[64];
    mb_lower_fn_name(name, sizeof name, B, L);
    const lower_fn_info *f = lower_manifest_fn(&m->man.program, name);
    return f && lower_fn_io(f, "mask_local", 0);
}

/* One chunk of n <= B rows (starting at row r0 of io) through function
 * (B, L); writes last (and hidden) for those rows. emb: [batch*seq][D]. */
static nc_status run_chunk(mb_run *m, const modernbert_io *io, const float *emb, int r0, int n,
                           int B, int L, float *last, nc_error *err) {
    const modernbert_config *c = mb_run_config(m);
    int D = c->hidden_size, S = io->seq, W = c->local_attention / 2, NL = c->num_hidden_layers;
    size_t nx = (size_t)B * D * L, nm = (size_t)B * L * L;
    int has_ml = takes_mask_local(m, B, L);
    float *x = calloc(nx, sizeof *x), *mg = calloc(nm, sizeof *mg), *ml = calloc(nm, sizeof *ml);
    float **out = calloc((size_t)NL, sizeof *out);
    nc_status st = x && mg && ml && out ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int k = 0; !st && k < NL; k++)
        if (k == NL - 1 || io->hidden) {
            out[k] = malloc(nx * sizeof **out);
            if (!out[k]) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
        }
    for (int b = 0; !st && b < n; b++) {
        const int32_t *mask = io->mask ? io->mask + (size_t)(r0 + b) * S : NULL;
        for (int t = 0; t < S; t++)
            for (int ch = 0; ch < D; ch++)
                x[((size_t)b * D + ch) * L + t] = emb[((size_t)(r0 + b) * S + t) * D + ch];
        /* [b, key, 0, query]: pad keys (and keys past the input) closed for
         * every query; the band |q - k| <= W on top for local layers */
        for (int k = 0; k < L; k++) {
            int open = k < S && (!mask || mask[k]);
            for (int q = 0; q < L; q++) {
                size_t i = ((size_t)b * L + k) * L + q;
                mg[i] = open ? 0.0f : (float)MB_LOWER_MASK_NEG;
                ml[i] = open && abs(q - k) <= W ? 0.0f : (float)MB_LOWER_MASK_NEG;
            }
        }
    }
    m->crossings += 3 + has_ml; /* x, the masks in; hidden out */
    if (!st)
        st = m->island ? m->island(m->island_user, B, L, x, mg, has_ml ? ml : NULL, out, err)
                       : interp_island(m, B, L, x, mg, has_ml ? ml : NULL, out, err);
    /* outputs back to [row][t][D]; pad positions stay zero as on the CPU */
    for (int l = 1; !st && l <= NL; l++) {
        float *dst = l == NL ? last : io->hidden + (size_t)l * io->batch * S * D;
        const float *v = out[l - 1];
        if (!v) continue;
        for (int b = 0; b < n; b++) {
            const int32_t *mask = io->mask ? io->mask + (size_t)(r0 + b) * S : NULL;
            for (int t = 0; t < S; t++)
                for (int ch = 0; ch < D; ch++)
                    dst[((size_t)(r0 + b) * S + t) * D + ch] =
                        !mask || mask[t] ? v[((size_t)b * D + ch) * L + t] : 0.0f;
        }
    }
    for (int k = 0; out && k < NL; k++)
        free(out[k]);
    free(out);
    free(x);
    free(mg);
    free(ml);
    return st;
}

nc_status mb_run_forward(mb_run *m, const modernbert_io *io, nc_error *err) {
    const modernbert_config *c = mb_run_config(m);
    const mb_manifest *mf = &m->man;
    int D = c->hidden_size, S = io->seq;
    if (io->batch < 1 || S < 1) return nc_fail(err, NC_ERR_INVALID, "empty batch");
    int L = 0;
    for (int i = 0; i < mf->n_seqs && !L; i++)
        if (mf->seqs[i] >= S) L = mf->seqs[i];
    if (!L)
        return nc_fail(err, NC_ERR_RANGE,
                       "%d tokens exceed the largest compiled bucket (%d); "
                       "recompile with --buckets",
                       S, mf->seqs[mf->n_seqs - 1]);
    for (int b = 0; io->mask && b < io->batch; b++) {
        int real = 0;
        for (int t = 0; t < S; t++)
            real += io->mask[(size_t)b * S + t] != 0;
        if (!real) return nc_fail(err, NC_ERR_INVALID, "input %d has no real tokens", b);
    }
    size_t rows = (size_t)io->batch * S;
    float *emb = malloc(rows * D * sizeof *emb);
    float *last = io->last ? io->last : malloc(rows * D * sizeof *last);
    if (!emb || !last) {
        free(emb);
        if (!io->last) free(last);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    nc_status st = modernbert_embed(m->host, io->ids, (int)rows, emb, err);
    if (!st && io->hidden) /* entry 0: the embeddings output, zero at pads */
        for (size_t r = 0; r < rows; r++)
            for (int ch = 0; ch < D; ch++)
                io->hidden[r * D + ch] = !io->mask || io->mask[r] ? emb[r * D + ch] : 0.0f;
    int max_b = mf->batches[mf->n_batches - 1];
    for (int r0 = 0; !st && r0 < io->batch;) {
        int n = io->batch - r0 < max_b ? io->batch - r0 : max_b, B = max_b;
        for (int i = 0; i < mf->n_batches; i++)
            if (mf->batches[i] >= n) {
                B = mf->batches[i];
                break;
            }
        st = run_chunk(m, io, emb, r0, n, B, L, last, err);
        r0 += n;
    }
    if (!st && io->hidden)
        memcpy(io->hidden + (size_t)c->num_hidden_layers * rows * D, last, rows * D * sizeof *last);
    if (!st && (io->pooled || io->mlm_logits || io->cls_logits))
        st = modernbert_tail(m->host, last, io, err);
    free(emb);
    if (!io->last) free(last);
    return st;
}
