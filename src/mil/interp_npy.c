/* .npy in and out of the MIL interpreter: numpy arrays bound as function
 * inputs and variables written in their declared dtype. Used by `nectar mil
 * run` and the op-level tests. */
#include <stdlib.h>

#include "io/npy.h"
#include "mil/interp.h"

static mil_dtype npy_to_mil(nc_npy_dtype t) {
    switch (t) {
    case NC_NPY_BOOL: return MIL_DT_BOOL;
    case NC_NPY_I8: return MIL_DT_INT8;
    case NC_NPY_U8: return MIL_DT_UINT8;
    case NC_NPY_I16: return MIL_DT_INT16;
    case NC_NPY_U16: return MIL_DT_UINT16;
    case NC_NPY_I32: return MIL_DT_INT32;
    case NC_NPY_U32: return MIL_DT_UINT32;
    case NC_NPY_I64: return MIL_DT_INT64;
    case NC_NPY_U64: return MIL_DT_UINT64;
    case NC_NPY_F16: return MIL_DT_FP16;
    case NC_NPY_F32: return MIL_DT_FP32;
    case NC_NPY_F64: return MIL_DT_FP64;
    }
    return MIL_DT_INVALID;
}

nc_status mil_interp_set_input_npy(mil_interp *it, const char *name, const nc_npy *a,
                                   nc_error *err) {
    return mil_interp_set_input(it, name, npy_to_mil(a->dtype), a->ndim, a->shape, a->data, err);
}

nc_status mil_interp_write_npy(const mil_interp *it, const char *name, const char *path,
                               nc_error *err) {
    mil_interp_view v;
    NC_TRY(mil_interp_get(it, name, &v, err));
    mil_dtype dt = v.dtype;
    nc_npy_dtype nt;
    size_t esz;
    if (dt == MIL_DT_FP16 && mil_interp_get_mode(it) == MIL_INTERP_FP16) { nt = NC_NPY_F16; esz = 2; }
    else if (v.f32) { dt = MIL_DT_FP32; nt = NC_NPY_F32; esz = 4; }
    else if (dt == MIL_DT_BOOL) { nt = NC_NPY_BOOL; esz = 1; }
    else { dt = MIL_DT_INT32; nt = NC_NPY_I32; esz = 4; }
    void *buf = malloc(v.count ? v.count * esz : 1);
    if (!buf) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = mil_interp_copy_out(it, name, dt, buf, v.count, err);
    if (st == NC_OK) st = nc_npy_write(path, nt, v.rank, v.shape, buf, err);
    free(buf);
    return st;
}
