/* The interpreter against numpy, op by op: every case in
 * tests/fixtures/mil/ops/cases.json (written by tools/mil_goldens.py: one
 * small program per case over awkward shapes and fp16 edge values) runs in
 * fp16 mode against numpy's result rounded once to fp16, and in fp32 mode
 * against numpy's float64 result, within the tolerances the case states. */
#include <math.h>
#include <stdint.h>

#include "../test.h"
#include "base/half.h"
#include "base/json.h"
#include "io/npy.h"
#include "mil/interp.h"
#include "mil/parse.h"

#define OPS_DIR "tests/fixtures/mil/ops"

/* Expected value i of a .npy as double (bools and ints exact). */
static double npy_at(const nc_npy *a, size_t i) {
    switch (a->dtype) {
    case NC_NPY_F16: return nc_fp16_to_f32(((const uint16_t *)a->data)[i]);
    case NC_NPY_F32: return ((const float *)a->data)[i];
    case NC_NPY_I32: return ((const int32_t *)a->data)[i];
    case NC_NPY_BOOL: return ((const uint8_t *)a->data)[i] != 0;
    default: return NAN;
    }
}

/* 1 when got matches want: NaN with NaN, infinities exactly, finite values
 * within abs + rel * |want|. */
static int close_enough(double got, double want, double abs_tol, double rel_tol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    if (!isfinite(got)) return 0;
    return fabs(got - want) <= abs_tol + rel_tol * fabs(want);
}

/* Runs one case in one mode; returns 0 on success, prints why on failure. */
static int run_case(const json_t *c, int fp16) {
    const char *name = json_string_value(json_object_get(c, "name"));
    char path[512];
    nc_error err;
    mil_program *prog = NULL;
    mil_interp *it = NULL;
    int bad = 1;
    snprintf(path, sizeof path, "%s/%s/model.mil", OPS_DIR, name);
    if (mil_parse_file(path, &prog, &err) != NC_OK) {
        printf("  %s: parse: %s\n", name, err.msg);
        return 1;
    }
    if (mil_interp_new(prog, "main", fp16 ? MIL_INTERP_FP16 : MIL_INTERP_FP32, &it, &err) != NC_OK) {
        printf("  %s: prepare: %s\n", name, err.msg);
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(c, "inputs"), key, v) {
        nc_npy a;
        snprintf(path, sizeof path, "%s/%s/%s", OPS_DIR, name, json_string_value(v));
        if (nc_npy_read(path, &a, &err) != NC_OK) {
            printf("  %s: %s\n", name, err.msg);
            goto out;
        }
        nc_status st = mil_interp_set_input_npy(it, key, &a, &err);
        nc_npy_free(&a);
        if (st != NC_OK) {
            printf("  %s: input %s: %s\n", name, key, err.msg);
            goto out;
        }
    }
    if (mil_interp_run(it, &err) != NC_OK) {
        printf("  %s: run: %s\n", name, err.msg);
        goto out;
    }
    const json_t *tol = json_object_get(c, fp16 ? "tol_fp16" : "tol_fp32");
    double abs_tol = json_number_value(json_object_get(tol, "abs"));
    double rel_tol = json_number_value(json_object_get(tol, "rel"));
    json_object_foreach(json_object_get(c, "outputs"), key, v) {
        const char *file = json_string_value(json_object_get(v, "exact"));
        if (!file) file = json_string_value(json_object_get(v, fp16 ? "fp16" : "fp32"));
        nc_npy want;
        snprintf(path, sizeof path, "%s/%s/%s", OPS_DIR, name, file);
        if (nc_npy_read(path, &want, &err) != NC_OK) {
            printf("  %s: %s\n", name, err.msg);
            goto out;
        }
        mil_interp_view got;
        int shape_ok = mil_interp_get(it, key, &got, &err) == NC_OK && got.rank == want.ndim &&
                       got.count == want.count;
        for (int i = 0; shape_ok && i < got.rank; i++)
            if (got.shape[i] != want.shape[i]) shape_ok = 0;
        if (!shape_ok) {
            printf("  %s: output %s: shape or presence differs from numpy's\n", name, key);
            nc_npy_free(&want);
            goto out;
        }
        for (size_t i = 0; i < got.count; i++) {
            double g = got.f32 ? got.f32[i] : got.i32[i], w = npy_at(&want, i);
            if (!close_enough(g, w, abs_tol, rel_tol)) {
                printf("  %s (%s): output %s[%zu] = %.9g, numpy %.9g\n", name, fp16 ? "fp16" : "fp32",
                       key, i, g, w);
                nc_npy_free(&want);
                goto out;
            }
        }
        nc_npy_free(&want);
    }
    bad = 0;
out:
    mil_interp_free(it);
    mil_program_free(prog);
    return bad;
}

static void run_all(int fp16) {
    json_t *root;
    nc_error err;
    CHECK_OK(nc_json_load_file(OPS_DIR "/cases.json", &root, &err), &err);
    json_t *cases = json_object_get(root, "cases");
    size_t i, n_bad = 0;
    json_t *c;
    json_array_foreach(cases, i, c) n_bad += (size_t)run_case(c, fp16);
    size_t n = json_array_size(cases);
    json_decref(root);
    CHECKF(n >= 100, "only %zu cases in cases.json", n);
    CHECKF(n_bad == 0, "%zu of %zu cases differ from numpy", n_bad, n);
}

static void test_interp_ops_match_numpy_fp16_mode(void) { run_all(1); }
static void test_interp_ops_match_numpy_fp32_mode(void) { run_all(0); }

int main(void) {
    RUN(test_interp_ops_match_numpy_fp16_mode);
    RUN(test_interp_ops_match_numpy_fp32_mode);
    return nc_test_exit_code();
}
