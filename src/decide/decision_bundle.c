/* The decision region run from a bundle (decision_bundle.h). The encoder
 * bundle runner (modernbert_bundle_host.h) lays the embeddings out as [B, D, 1, L]
 * columns and builds the masks; the island set here adds the one-hot type
 * input and runs the region's function in the interpreter. */
#include "decide/decision_bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_runner.h"
#include "decide/decision_impl.h"
#include "decide/decision_lower.h"
#include "engine/engine_ane_device.h"
#include "bundle/modernbert_manifest.h"
#include "engine/modernbert_bundle_host.h"
#include "mil/interp.h"
#include "mil/parse.h"

typedef struct bundle_region {
    decision_model *m;
    mb_run *run;
    mb_manifest man;
    mil_program *prog;
    mil_interp *fns[LOWER_MAX_FUNCS]; /* by manifest order, prepared on first use */
    /* on a device instead: the bundle loaded there and one runner */
    engine_ane_dev dev;
    ane_bundle *loaded;
    ane_runner *runner;
    /* the chunk being run: its type ids [n][seq] */
    const int32_t *types;
    int n, seq;
    decision_crossings cross;
} bundle_region;

static void region_free(void *user) {
    bundle_region *r = user;
    ane_runner_free(r->runner);
    ane_bundle_free(r->loaded);
    engine_ane_device_close(&r->dev);
    for (int i = 0; i < LOWER_MAX_FUNCS; i++)
        mil_interp_free(r->fns[i]);
    mil_program_free(r->prog);
    mb_run_free(r->run);
    free(r);
}

static nc_status function_for(bundle_region *r, int B, int L, mil_interp **out, nc_error *err) {
    char name[64];
    mb_lower_fn_name(name, sizeof name, B, L);
    for (int i = 0; i < r->man.program.n_fns; i++) {
        if (strcmp(r->man.program.fns[i].name, name)) continue;
        if (!r->fns[i]) NC_TRY(mil_interp_new(r->prog, name, MIL_INTERP_FP16, &r->fns[i], err));
        *out = r->fns[i];
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_FORMAT, "bundle: function %s is missing", name);
}

/* Function (B, L) in the interpreter: inputs [B, C, 1, L], `hidden` out. */
static nc_status interpreted(bundle_region *r, int B, int L, const float *x, const float *mg,
                             const float *ml, const float *types, float *hidden, nc_error *err) {
    const decision_config *c = &r->m->cfg;
    int D = c->hidden_size, T = c->type_vocab_size;
    mil_interp *it = NULL;
    NC_TRY(function_for(r, B, L, &it, err));
    int64_t xs[4] = {B, D, 1, L}, ms[4] = {B, L, 1, L}, ts[4] = {B, T, 1, L};
    NC_TRY(mil_interp_set_input(it, "x", MIL_DT_FP32, 4, xs, x, err));
    NC_TRY(mil_interp_set_input(it, "mask_global", MIL_DT_FP32, 4, ms, mg, err));
    if (ml) NC_TRY(mil_interp_set_input(it, "mask_local", MIL_DT_FP32, 4, ms, ml, err));
    NC_TRY(mil_interp_set_input(it, "types", MIL_DT_FP32, 4, ts, types, err));
    NC_TRY(mil_interp_run(it, err));
    mil_interp_view v;
    NC_TRY(mil_interp_get(it, "hidden", &v, err));
    size_t nx = (size_t)B * D * L;
    if (v.count != nx || !v.f32)
        return nc_fail(err, NC_ERR_FORMAT, "bundle: hidden has the wrong shape");
    memcpy(hidden, v.f32, nx * sizeof *hidden);
    return NC_OK;
}

/* The same on the device: inputs into the function's surfaces, one
 * request, `hidden` read back. */
static nc_status on_device(bundle_region *r, int B, int L, const float *x, const float *mg,
                           const float *ml, const float *types, float *hidden, nc_error *err) {
    const decision_config *c = &r->m->cfg;
    size_t nx = (size_t)B * c->hidden_size * L, nm = (size_t)B * L * L;
    NC_TRY(ane_runner_write(r->runner, B, L, "x", x, nx, err));
    NC_TRY(ane_runner_write(r->runner, B, L, "mask_global", mg, nm, err));
    if (ml) NC_TRY(ane_runner_write(r->runner, B, L, "mask_local", ml, nm, err));
    NC_TRY(ane_runner_write(r->runner, B, L, "types", types,
                            (size_t)B * c->type_vocab_size * L, err));
    NC_TRY(ane_runner_run(r->runner, B, L, -1, (ane_run_mode)r->dev.dev.preferred_mode, err));
    return ane_runner_read(r->runner, B, L, "hidden", hidden, nx, err);
}

/* mb_island_fn: the region's function with the chunk's one-hot types. */
static nc_status island(void *user, int B, int L, const float *x, const float *mg,
                        const float *ml, float *const *out, nc_error *err) {
    bundle_region *r = user;
    const decision_config *c = &r->m->cfg;
    int D = c->hidden_size, T = c->type_vocab_size, NL = r->man.num_hidden_layers;
    for (int k = 0; k < NL - 1; k++)
        if (out[k])
            return nc_fail(err, NC_ERR_UNSUPPORTED, "decision bundle: no per-layer outputs");
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
                             : interpreted(r, B, L, x, mg, ml, oh, out[NL - 1], err);
    free(oh);
    NC_TRY(st);
    /* fp16 on the wire: x, masks and types in, hidden out */
    r->cross.calls++;
    r->cross.bytes_in += 2LL * ((long long)nx + (long long)B * L * L * (ml ? 2 : 1) +
                                (long long)B * T * L);
    r->cross.bytes_out += 2LL * (long long)nx;
    return NC_OK;
}

/* decision_model.region: chunks of at most the largest compiled batch,
 * each through the encoder bundle runner with the island above. */
static nc_status region_run(void *user, const decision_io *io, const int32_t *types, float *x,
                            nc_error *err) {
    bundle_region *r = user;
    int max_b = r->man.batches[r->man.n_batches - 1], S = io->seq, D = r->man.hidden_size;
    for (int r0 = 0; r0 < io->batch; r0 += max_b) {
        int n = io->batch - r0 < max_b ? io->batch - r0 : max_b;
        size_t off = (size_t)r0 * S;
        r->types = types + off;
        r->n = n;
        r->seq = S;
        modernbert_io eio = {.ids = io->ids + off, .mask = io->mask ? io->mask + off : NULL,
                             .batch = n, .seq = S, .last = x + off * D, .pooling = -1};
        NC_TRY(mb_run_forward(r->run, &eio, err));
    }
    return NC_OK;
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
    nc_status st = mb_manifest_read(bundle, &r->man, err);
    if (!st) st = decision_load(r->man.source_dir, n_threads, &r->m, err);
    if (!st) st = mb_run_open(bundle, n_threads, &r->run, err);
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", bundle, r->man.program.path);
    if (!st) st = mil_parse_file(path, &r->prog, err);
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
    decision_crossings none = {0, 0, 0};
    return m->region_free == region_free ? ((bundle_region *)m->region_user)->cross : none;
}

nc_status decision_open_backend(const char *model, const char *backend, const char *ane_device,
                                int n_threads, decision_model **out, nc_error *err) {
    *out = NULL;
    if (!strcmp(backend, "cpu")) return decision_load(model, n_threads, out, err);
    if (!strcmp(backend, "mil")) return decision_bundle_open(model, n_threads, NULL, out, err);
    if (strcmp(backend, "ane"))
        return nc_fail(err, NC_ERR_INVALID, "--backend %s: cpu, mil or ane", backend);
    engine_options eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = n_threads;
    NC_TRY(engine_ane_device_parse(ane_device, "--ane-device", &eo, err));
    return decision_bundle_open(model, n_threads, &eo, out, err);
}
