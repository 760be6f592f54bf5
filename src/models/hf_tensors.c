/* Tensor lookups for the CPU model loaders (see hf_tensors.h). */
#include "models/hf_tensors.h"

#include <stdio.h>

static void shape_str(char *buf, size_t cap, const int64_t *shape, int ndim) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

static cpu_wtype wtype_of(st_dtype d) {
    return d == ST_F32 ? CPU_W_F32 : d == ST_F16 ? CPU_W_F16 : CPU_W_BF16;
}

nc_status hft_find(const hf_weights *w, const char *dir, const char *name, int ndim,
                   const int64_t *shape, const st_tensor **out, nc_error *err) {
    const char *file = NULL;
    const st_tensor *t = hf_weights_find(w, name, &file);
    if (!t) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: tensor '%s' not found", dir, name);
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: tensor '%s' has dtype %s; expected F32, F16 or BF16", file, name,
                       st_dtype_name(t->dtype));
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    if (!same) {
        char got[128], exp[128];
        shape_str(got, sizeof got, t->shape, t->ndim);
        shape_str(exp, sizeof exp, shape, ndim);
        return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s' has shape %s; the config needs %s",
                       file, name, got, exp);
    }
    if ((uintptr_t)t->data % st_dtype_size(t->dtype))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: tensor '%s' is not aligned to its %zu-byte elements", file, name,
                       st_dtype_size(t->dtype));
    *out = t;
    return NC_OK;
}

/* A matrix written by `nectar quantize`: dtype U8, shape [rows, row bytes],
 * the row bytes telling Q8 (34 per 32 weights) from Q4 (18 per 32); see
 * docs/performance.md. */
static nc_status load_quant_mat(const char *name, const char *file, const st_tensor *t, int rows,
                                int cols, cpu_mat *out, nc_error *err) {
    int64_t q8 = (int64_t)cpu_wtype_row_bytes(CPU_W_Q8, cols);
    int64_t q4 = (int64_t)cpu_wtype_row_bytes(CPU_W_Q4, cols);
    if (t->ndim != 2 || t->shape[0] != rows || (t->shape[1] != q8 && t->shape[1] != q4)) {
        char got[128];
        shape_str(got, sizeof got, t->shape, t->ndim);
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: quantized tensor '%s' has shape %s; the config needs [%d, %lld] (q8) "
                       "or [%d, %lld] (q4)",
                       file, name, got, rows, (long long)q8, rows, (long long)q4);
    }
    out->type = t->shape[1] == q8 ? CPU_W_Q8 : CPU_W_Q4;
    out->data = t->data;
    return NC_OK;
}

nc_status hft_load_mat(const hf_weights *w, const char *dir, const char *name, int rows, int cols,
                       cpu_mat *out, nc_error *err) {
    const char *file = NULL;
    const st_tensor *t = hf_weights_find(w, name, &file);
    out->rows = rows;
    out->cols = cols;
    if (t && t->dtype == ST_U8) return load_quant_mat(name, file, t, rows, cols, out, err);
    NC_TRY(hft_find(w, dir, name, 2, (const int64_t[]){rows, cols}, &t, err));
    out->type = wtype_of(t->dtype);
    out->data = t->data;
    return NC_OK;
}

nc_status hft_load_vec(const hf_weights *w, const char *dir, const char *name, int ndim,
                       const int64_t *shape, float **dst, const float **out, nc_error *err) {
    const st_tensor *t;
    NC_TRY(hft_find(w, dir, name, ndim, shape, &t, err));
    int n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (int)shape[i];
    cpu_kernels_scalar.row_to_f32[wtype_of(t->dtype)](t->data, *dst, n);
    *out = *dst;
    *dst += n;
    return NC_OK;
}
