/* Fuzz target: any program the parser accepts goes through the checker
 * (with the ANE rules) and the interpreter (both modes, inputs filled with a
 * pattern) without a crash, leak or hang: problems must come back as
 * diagnostics or error statuses. Tensors are capped at 4096 elements so
 * that every run stays small. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mil/check.h"
#include "mil/interp.h"
#include "mil/parse.h"

#define MAX_ELEMS 4096

static void run_function(const mil_program *p, const mil_function *fn, mil_interp_mode mode) {
    mil_interp *it;
    nc_error err;
    if (mil_interp_new_limited(p, fn->name, mode, MAX_ELEMS, &it, &err) != NC_OK) return;
    float *data = malloc(MAX_ELEMS * sizeof *data);
    for (int i = 0; data && i < MAX_ELEMS; i++)
        data[i] = (float)((i * 37) % 11) - 5.0f;
    for (int i = 0; data && i < fn->n_inputs; i++) {
        const mil_type *t = fn->inputs[i]->type;
        if (t && t->kind == MIL_TYPE_STATE && t->n_elems) t = t->elems[0];
        if (!t || t->kind != MIL_TYPE_TENSOR || t->rank > 8) continue;
        int64_t shape[8];
        int64_t n = 1;
        for (int d = 0; d < t->rank; d++) {
            shape[d] = t->dims[d] < 0 ? 2 : t->dims[d];
            n = shape[d] > MAX_ELEMS ? MAX_ELEMS + 1 : n * shape[d];
            if (n > MAX_ELEMS) break;
        }
        if (n > MAX_ELEMS) continue;
        mil_interp_set_input(it, fn->inputs[i]->name, MIL_DT_FP32, t->rank, shape, data, &err);
    }
    if (mil_interp_run(it, &err) == NC_OK) mil_interp_run(it, &err); /* a rerun reuses buffers */
    free(data);
    mil_interp_free(it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mil_program *p;
    nc_error err;
    if (mil_parse((const char *)data, size, "fuzz", &p, &err) != NC_OK) return 0;
    mil_diagnostics d = {0};
    mil_check_options opt = {1, NULL, NULL};
    mil_check_program(p, &opt, &d, &err);
    mil_diagnostics_free(&d);
    for (int f = 0; f < p->n_functions && f < 4; f++) {
        run_function(p, p->functions[f], MIL_INTERP_FP16);
        run_function(p, p->functions[f], MIL_INTERP_FP32);
    }
    mil_program_free(p);
    return 0;
}
