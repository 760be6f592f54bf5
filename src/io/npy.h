/* NumPy .npy files (format 1.0-3.0, little-endian, C order): the exchange
 * format for interpreter inputs/outputs (`nectar mil run --in x=x.npy`),
 * embeddings and test fixtures produced by numpy. */
#ifndef NC_IO_NPY_H
#define NC_IO_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define NC_NPY_MAX_DIMS 8

typedef enum {
    NC_NPY_BOOL, NC_NPY_I8, NC_NPY_U8, NC_NPY_I16, NC_NPY_U16, NC_NPY_I32, NC_NPY_U32,
    NC_NPY_I64, NC_NPY_U64, NC_NPY_F16, NC_NPY_F32, NC_NPY_F64
} nc_npy_dtype;

typedef struct nc_npy {
    nc_npy_dtype dtype;
    int ndim;
    int64_t shape[NC_NPY_MAX_DIMS];
    size_t count;      /* number of elements */
    size_t size_bytes; /* count * element size */
    void *data;        /* heap, owned; free with nc_npy_free */
} nc_npy;

size_t nc_npy_dtype_size(nc_npy_dtype t);
const char *nc_npy_dtype_descr(nc_npy_dtype t); /* "<f4", "|b1", ... */

nc_status nc_npy_read(const char *path, nc_npy *out, nc_error *err);
/* Parses an in-memory .npy image (what fuzzers and tests feed). */
nc_status nc_npy_parse(const void *buf, size_t len, const char *what, nc_npy *out,
                       nc_error *err);
nc_status nc_npy_write(const char *path, nc_npy_dtype dtype, int ndim, const int64_t *shape,
                       const void *data, nc_error *err);
void nc_npy_free(nc_npy *a);

/* Converts any numeric array to a newly allocated float array (count elems). */
nc_status nc_npy_to_f32(const nc_npy *a, float **out, nc_error *err);

#endif
