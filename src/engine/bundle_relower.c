/* The relower rung's hook (bundle_relower.h): each form is a function of
 * the refused MIL function and the bundle's manifest, and calls the same
 * src/lower builders `nectar compile` does, on weights read back from the
 * program's weight.bin. */
#include "engine/bundle_relower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_stage.h"
#include "lower/qwen3_lower.h"
#include "mil/print.h"

/* Weight `name` of fn (a const of a BLOBFILE or inline fp16 tensor) as a
 * lower_weight over its bytes (valid while prog lives); *found 0 when fn
 * has no such value. */
static nc_status bundle_weight(const mil_program *prog, const mil_function *fn, const char *name,
                               lower_weight *w, int *found, nc_error *err) {
    const mil_var *v = mil_function_var(fn, name);
    memset(w, 0, sizeof *w);
    *found = v != NULL;
    if (!v) return NC_OK;
    if (!v->cval)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: '%s' is not a constant (palettized weights are not read back)",
                       fn->name, name);
    const mil_type *t = v->type;
    if (!t || t->dtype != MIL_DT_FP16 || t->rank != 4)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: '%s' is not an fp16 tensor of rank 4",
                       fn->name, name);
    const uint8_t *bytes;
    size_t n;
    NC_TRY(mil_value_bytes(prog, v->cval, &bytes, &n, err));
    w->data = (const nc_fp16 *)bytes;
    lower_weight_shape4(w, t->dims[0], t->dims[1], t->dims[2], t->dims[3]);
    return NC_OK;
}

/* Prints the built program into dst/model.mil (the builder wrote its
 * weights) and frees it. */
static nc_status finish(mil_program *prog, const char *dst, nc_error *err) {
    char path[4600];
    snprintf(path, sizeof path, "%s/model.mil", dst);
    nc_status st = mil_print_file(prog, path, err);
    mil_program_free(prog);
    return st;
}

/* The head with every conv wider than LOWER_HEAD_ROWS_DEFAULT as convs
 * over row slices of its weight: the same function head_s32, the same
 * logits_i outputs (a head split `one` keeps its several outputs). */
static nc_status relower_head(const ane_relower_ask *ask, const mil_function *fn, char *form,
                              size_t form_cap, nc_error *err) {
    const lower_manifest *man = ask->man;
    lower_weight norm, chunks[LOWER_MAX_HEAD_CHUNKS];
    int found, first = -1, wide = 0, n = fn->n_outputs;
    NC_TRY(bundle_weight(ask->prog, fn, "final_norm_weight", &norm, &found, err));
    if (!found || n < 1 || n > LOWER_MAX_HEAD_CHUNKS ||
        sscanf(fn->outputs[0]->name, "logits_%d", &first) != 1)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: not a head function of this lowering",
                       fn->name);
    for (int k = 0; k < n; k++) {
        char name[64];
        snprintf(name, sizeof name, "logits_%d_weight", first + k);
        NC_TRY(bundle_weight(ask->prog, fn, name, &chunks[k], &found, err));
        if (!found) { /* Gemma 3's softcapped head: the conv is logits_i_raw */
            snprintf(name, sizeof name, "logits_%d_raw_weight", first + k);
            NC_TRY(bundle_weight(ask->prog, fn, name, &chunks[k], &found, err));
        }
        if (!found)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: no weight for output logits_%d",
                           fn->name, first + k);
        wide += chunks[k].dims[0] > LOWER_HEAD_ROWS_DEFAULT;
    }
    if (!wide)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: no conv wider than %d channels to slice, and no other head form is "
                       "re-lowered",
                       fn->name, LOWER_HEAD_ROWS_DEFAULT);
    lower_plan plan = {.cfg = &man->cfg, .ctx = man->ctx};
    mil_program *prog = NULL;
    NC_TRY(lower_qwen3_head_program_sliced(&plan, &norm, chunks, n, first, LOWER_HEAD_ROWS_DEFAULT,
                                           ask->dst, &prog, err));
    snprintf(form, form_cap, "head rows %d", LOWER_HEAD_ROWS_DEFAULT);
    return finish(prog, ask->dst, err);
}

nc_status engine_bundle_relower(void *user, const ane_relower_ask *ask, char *form,
                                size_t form_cap, nc_error *err) {
    (void)user;
    const lower_program_info *pi = &ask->man->programs[ask->program];
    const mil_function *fn = ask->prog ? mil_program_function(ask->prog, ask->fn) : NULL;
    if (!fn) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no function %s", pi->path, ask->fn);
    NC_TRY(ane_make_dirs(ask->dst, err));
    if (pi->layer < 0) return relower_head(ask, fn, form, form_cap, err);
    return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: no other form of %s is re-lowered from the bundle",
                   pi->path, ask->fn);
}
