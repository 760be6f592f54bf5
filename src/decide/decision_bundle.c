/* The decision region run from a bundle (decision_bundle.h). The encoder
 * bundle runner (modernbert_bundle_host.h) lays the embeddings out as [B, D, 1, L]
 * columns and builds the masks; the island set here adds the one-hot type
 * input and runs the region's function in the interpreter. */
#include "decide/decision_bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_runner.h"
#include "base/timer.h"
#include "decide/decision_impl.h"
#include "decide/decision_lower.h"
#include "engine/engine_ane_device.h"
#include "bundle/modernbert_manifest.h"
#include "engine/modernbert_bundle_host.h"
#include "mil/interp.h"

typedef struct bundle_region {
    decision_model *m;
    mb_run *run;
    mb_manifest man;
    mil_interp *fns[LOWER_MAX_FUNCS]; /* by manifest order, prepared on first use */
    /* on a device instead: the bundle loaded there and one runner */
    engine_ane_dev dev;
    ane_bundle *loaded;
    ane_runner *runner;
    /* the chunk being run: its type ids [n][seq] */
    const int32_t *types;
    int n, seq;
    /* per-layer outputs asked for: encoder_out, then each head layer's,
     * [B, D, 1, L] each, read off the interpreter */
    float **extra;
    int last_b, last_l; /* the compiled shape of the last call */
    decision_crossings cross;
} bundle_region;

static void region_free(void *user) {
    bundle_region *r = user;
    ane_runner_free(r->runner);
    ane_bundle_free(r->loaded);
    engine_ane_device_close(&r->dev);
    for (int i = 0; i < LOWER_MAX_FUNCS; i++)
        mil_interp_free(r->fns[i]);
    mb_run_free(r->run);
    free(r);
}

static nc_status function_for(bundle_region *r, int B, int L, mil_interp **out, nc_error *err) {
    char name[64];
    mb_lower_fn_name(name, sizeof name, B, L);
    for (int i = 0; i < r->man.program.n_fns; i++) {
        if (strcmp(r->man.program.fns[i].name, name)) continue;
        if (!r->fns[i])
            NC_TRY(mil_interp_new(mb_run_program(r->run), name, MIL_INTERP_FP16, &r->fns[i], err));
        *out = r->fns[i];
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_FORMAT, "bundle: function %s is missing", name);
}

/* The per-layer values the parity gate asks for (out[k], k < N - 1: the
 * encoder layers; r->extra: encoder_out and the head layers), read off the
 * interpreter by their names in the program. */
static nc_status read_layers(bundle_region *r, mil_interp *it, size_t nx, float *const *out,
                             nc_error *err) {
    int NL = r->man.num_hidden_layers, H = r->m->cfg.head_layers;
    for (int k = 0; k < NL - 1 + (r->extra ? 1 + H : 0); k++) {
        float *dst = k < NL - 1 ? out[k] : r->extra[k - (NL - 1)];
        if (!dst) continue;
        char var[32];
        int j = k - NL; /* the head layer, when >= 0 */
        if (k < NL - 1) mb_lower_layer_var(var, sizeof var, k);
        else if (j < 0) snprintf(var, sizeof var, "encoder_out");
        else snprintf(var, sizeof var, j == H - 1 ? "hidden" : "hd%02d_out", j);
        mil_interp_view v;
        NC_TRY(mil_interp_get(it, var, &v, err));
        if (v.count != nx || !v.f32)
            return nc_fail(err, NC_ERR_FORMAT, "bundle: %s has the wrong shape", var);
        memcpy(dst, v.f32, nx * sizeof *dst);
    }
    return NC_OK;
}

/* Function (B, L) in the interpreter: inputs [B, C, 1, L], `hidden` out. */
static nc_status interpreted(bundle_region *r, int B, int L, const float *x, const float *mg,
                             const float *ml, const float *types, float *const *out,
                             nc_error *err) {
    float *hidden = out[r->man.num_hidden_layers - 1];
    const decision_config *c = &r->m->cfg;
    int D = c->hidden_size, T = c->type_vocab_size;
    mil_interp *it = NULL;
    NC_TRY(function_for(r, B, L, &it, err));
    int64_t xs[4] = {B, D, 1, L}, ms[4] = {B, L, 1, L}, ts[4] = {B, T, 1, L};
    double t0 = nc_now_s();
    NC_TRY(mil_interp_set_input(it, "x", MIL_DT_FP32, 4, xs, x, err));
    NC_TRY(mil_interp_set_input(it, "mask_global", MIL_DT_FP32, 4, ms, mg, err));
    if (ml) NC_TRY(mil_interp_set_input(it, "mask_local", MIL_DT_FP32, 4, ms, ml, err));
    NC_TRY(mil_interp_set_input(it, "types", MIL_DT_FP32, 4, ts, types, err));
    double t1 = nc_now_s();
    NC_TRY(mil_interp_run(it, err));
    double t2 = nc_now_s();
    mil_interp_view v;
    NC_TRY(mil_interp_get(it, "hidden", &v, err));
    size_t nx = (size_t)B * D * L;
    if (v.count != nx || !v.f32)
        return nc_fail(err, NC_ERR_FORMAT, "bundle: hidden has the wrong shape");
    memcpy(hidden, v.f32, nx * sizeof *hidden);
    r->cross.copy_s += (t1 - t0) + (nc_now_s() - t2);
    return read_layers(r, it, nx, out, err);
}

/* The same on the device: inputs into the function's surfaces, one
 * request, `hidden` read back. */
static nc_status on_device(bundle_region *r, int B, int L, const float *x, const float *mg,
                           const float *ml, const float *types, float *hidden, nc_error *err) {
    const decision_config *c = &r->m->cfg;
    size_t nx = (size_t)B * c->hidden_size * L, nm = (size_t)B * L * L;
    double t0 = nc_now_s();
    NC_TRY(ane_runner_write(r->runner, B, L, "x", x, nx, err));
    NC_TRY(ane_runner_write(r->runner, B, L, "mask_global", mg, nm, err));
    if (ml) NC_TRY(ane_runner_write(r->runner, B, L, "mask_local", ml, nm, err));
    NC_TRY(ane_runner_write(r->runner, B, L, "types", types,
                            (size_t)B * c->type_vocab_size * L, err));
    double t1 = nc_now_s();
    NC_TRY(ane_runner_run(r->runner, B, L, -1, (ane_run_mode)r->dev.dev.preferred_mode, err));
    double t2 = nc_now_s();
    NC_TRY(ane_runner_read(r->runner, B, L, "hidden", hidden, nx, err));
    r->cross.copy_s += (t1 - t0) + (nc_now_s() - t2);
    return NC_OK;
}

/* mb_island_fn: the region's function with the chunk's one-hot types. */
static nc_status island(void *user, int B, int L, const float *x, const float *mg,
                        const float *ml, float *const *out, nc_error *err) {
    bundle_region *r = user;
    const decision_config *c = &r->m->cfg;
    int D = c->hidden_size, T = c->type_vocab_size, NL = r->man.num_hidden_layers;
    r->last_b = B;
    r->last_l = L;
    for (int k = 0; k < NL - 1 && r->runner; k++)
        if (out[k])
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "decision bundle: per-layer outputs need --backend mil");
    float *oh = calloc((size_t)B * T * L, sizeof *oh);
    if (!oh) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    /* [b, type, 0, t]; pad rows and positions past the input take type 0 */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < L; t++) {
            int ty = b < r->n && t < r->seq ? r->types[(size_t)b * r->seq + t] : 0;
            oh[((size_t)b * T + ty) * L + t] = 1.0f;
        }
    size_t nx = (size_t)B * D * L;
    nc_status st = r->runner ? on_device(r, B, L, x, mg, ml, oh, out[NL - 1], err)
                             : interpreted(r, B, L, x, mg, ml, oh, out, err);
    free(oh);
    NC_TRY(st);
    /* fp16 on the wire: x, masks and types in, hidden out */
    decision_crossings *x_ = &r->cross;
    x_->calls++;
    x_->last_batch = B;
    x_->last_seq = L;
    x_->x_bytes += 2LL * (long long)nx;
    x_->mask_bytes += 2LL * B * L * L * (ml ? 2 : 1);
    x_->type_bytes += 2LL * B * T * L;
    x_->bytes_in = x_->x_bytes + x_->mask_bytes + x_->type_bytes;
    x_->bytes_out += 2LL * (long long)nx;
    return NC_OK;
}

/* Chunk rows [r0, r0 + n) of the per-layer values into io->layers
 * ([N + H][batch][seq][D]): the encoder layers but the last from the
 * runner's hidden states ([N + 1][n][S][D]), the rest from r->extra
 * ([B, D, 1, L] each); pad positions zero. */
static void scatter_layers(bundle_region *r, const decision_io *io, const float *hid, int r0,
                           int n, int B, int L) {
    int NL = r->man.num_hidden_layers, H = r->m->cfg.head_layers, S = io->seq;
    size_t D = (size_t)r->man.hidden_size, per = (size_t)io->batch * S * D;
    (void)B;
    for (int k = 0; k < NL + H; k++)
        for (int b = 0; b < n; b++)
            for (int t = 0; t < S; t++) {
                const int32_t *mask = io->mask ? io->mask + (size_t)(r0 + b) * S : NULL;
                float *dst = io->layers + k * per + ((size_t)(r0 + b) * S + t) * D;
                for (size_t ch = 0; ch < D; ch++) {
                    float v = k < NL - 1 ? hid[(size_t)(k + 1) * n * S * D +
                                               ((size_t)b * S + t) * D + ch]
                                         : r->extra[k - (NL - 1)][((size_t)b * D + ch) * L + t];
                    dst[ch] = !mask || mask[t] ? v : 0.0f;
                }
            }
}

/* decision_model.region: chunks of at most the largest compiled batch,
 * each through the encoder bundle runner with the island above. */
static nc_status region_run(void *user, const decision_io *io, const int32_t *types, float *x,
                            nc_error *err) {
    bundle_region *r = user;
    int max_b = r->man.batches[r->man.n_batches - 1], S = io->seq, D = r->man.hidden_size;
    int NL = r->man.num_hidden_layers, H = r->m->cfg.head_layers;
    int max_l = r->man.seqs[r->man.n_seqs - 1];
    size_t big = (size_t)max_b * D * max_l;
    float *hid = NULL;
    nc_status st = NC_OK;
    if (io->layers) { /* room for the largest chunk */
        hid = malloc((size_t)(NL + 1) * max_b * S * D * sizeof *hid);
        r->extra = calloc((size_t)(1 + H), sizeof *r->extra);
        for (int k = 0; r->extra && k <= H; k++)
            r->extra[k] = malloc(big * sizeof **r->extra);
        for (int k = 0; r->extra && k <= H; k++)
            if (!r->extra[k]) st = NC_ERR_NOMEM;
        if (!hid || !r->extra || st) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    for (int r0 = 0; st == NC_OK && r0 < io->batch; r0 += max_b) {
        int n = io->batch - r0 < max_b ? io->batch - r0 : max_b;
        size_t off = (size_t)r0 * S;
        r->types = types + off;
        r->n = n;
        r->seq = S;
        modernbert_io eio = {.ids = io->ids + off, .mask = io->mask ? io->mask + off : NULL,
                             .batch = n, .seq = S, .last = x + off * D, .hidden = hid,
                             .pooling = -1};
        st = mb_run_forward(r->run, &eio, err);
        if (st == NC_OK && io->layers) scatter_layers(r, io, hid, r0, n, r->last_b, r->last_l);
    }
    for (int k = 0; r->extra && k <= H; k++)
        free(r->extra[k]);
    free(r->extra);
    r->extra = NULL;
    free(hid);
    return st;
}

nc_status decision_bundle_open(const char *bundle, int n_threads, const engine_options *ane,
                               decision_model **out, nc_error *err) {
    *out = NULL;
    if (!decision_is_bundle(bundle))
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: no %s (not a decision bundle: nectar compile -m DECISION_DIR)", bundle,
                       DECISION_PARTITION_FILE);
    bundle_region *r = calloc(1, sizeof *r);
    if (!r) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    /* the runner loads the encoder and parses the program once; the head
     * borrows its encoder */
    nc_status st = mb_manifest_read(bundle, &r->man, err);
    if (!st) st = mb_run_open(bundle, n_threads, &r->run, err);
    if (!st) st = decision_load_with(r->man.source_dir, mb_run_host(r->run), n_threads, &r->m, err);
    if (!st && ane) st = engine_ane_device_open(ane, &r->dev, err);
    if (!st && ane) st = ane_bundle_open(&r->dev.dev, bundle, &r->loaded, err);
    if (!st && ane) st = ane_runner_new(r->loaded, &r->runner, err);
    if (st) {
        decision_free(r->m);
        r->m = NULL;
        region_free(r);
        return st;
    }
    mb_run_set_island(r->run, island, r);
    r->m->region = region_run;
    r->m->region_user = r;
    r->m->region_free = region_free;
    *out = r->m;
    return NC_OK;
}

decision_crossings decision_bundle_crossings(const decision_model *m) {
    decision_crossings none;
    memset(&none, 0, sizeof none);
    return m->region_free == region_free ? ((bundle_region *)m->region_user)->cross : none;
}

void decision_partition_text(const decision_model *m, char *buf, size_t cap) {
    const decision_config *c = &m->cfg;
    if (m->region_free != region_free) {
        snprintf(buf, cap, "CPU: the whole model (no partition: --backend cpu)");
        return;
    }
    const bundle_region *r = m->region_user;
    snprintf(buf, cap,
             "CPU: tokenizer, token embeddings, embedding LayerNorm; "
             "NE (%s): %d encoder layers + final norm + type addition + %d head layers; "
             "CPU: marker selection, scorer, raw and calibrated probabilities, action head",
             !r->runner ? "MIL interpreter, fp16" : r->dev.is_fake ? "fake ANE" : "ANE", r->man.num_hidden_layers,
             c->head_layers);
}

void decision_crossings_print(FILE *f, const char *who, const decision_model *m) {
    decision_crossings x = decision_bundle_crossings(m);
    char part[512];
    decision_partition_text(m, part, sizeof part);
    fprintf(f, "%s: partition: %s\n", who, part);
    if (!x.calls) return;
    fprintf(f,
            "%s: %ld region calls (last at B=%d L=%d: %lld B of fp16 embeddings each); "
            "CPU->NE %lld B (embeddings %lld, masks %lld, types %lld), NE->CPU %lld B "
            "(hidden); copies %.3f ms, inside the end-to-end time\n",
            who, x.calls, x.last_batch, x.last_seq,
            2LL * x.last_batch * x.last_seq * m->cfg.hidden_size, x.bytes_in, x.x_bytes,
            x.mask_bytes, x.type_bytes, x.bytes_out, x.copy_s * 1e3);
}

nc_status decision_open_backend(const char *model, const char *backend, const char *ane_device,
                                const char *who, int n_threads, decision_model **out,
                                nc_error *err) {
    *out = NULL;
    char what[128];
    if (!strcmp(backend, "cpu")) return decision_load(model, n_threads, out, err);
    if (!strcmp(backend, "mil")) return decision_bundle_open(model, n_threads, NULL, out, err);
    if (strcmp(backend, "ane"))
        return nc_fail(err, NC_ERR_INVALID, "%s%s%s %s: cpu, mil or ane", who ? who : "",
                       who ? ": backend" : "", who ? "" : "--backend", backend);
    engine_options eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = n_threads;
    snprintf(what, sizeof what, "%s%s", who ? who : "--ane-device", who ? ": option ane_device" : "");
    NC_TRY(engine_ane_device_parse(ane_device, what, &eo, err));
    return decision_bundle_open(model, n_threads, &eo, out, err);
}
