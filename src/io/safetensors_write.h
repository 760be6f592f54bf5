/* Writing safetensors files by streaming: the header is built from the
 * tensor list, then each tensor's bytes come from a fill callback in chunks,
 * through one large buffer (no whole-model copy in memory). The file appears
 * under its name only when complete (written to PATH.tmp, then renamed). */
#ifndef NC_IO_SAFETENSORS_WRITE_H
#define NC_IO_SAFETENSORS_WRITE_H

#include "io/safetensors.h"

/* Elements per fill call (the last call of a tensor may be shorter); fill
 * offsets are always multiples of this. */
#define ST_WRITE_CHUNK_ELEMS ((size_t)1 << 22)

typedef struct st_write_tensor {
    const char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
} st_write_tensor;

/* Writes n_elems elements of tensor `index` starting at element `first`. */
typedef nc_status (*st_fill_fn)(void *ctx, int index, size_t first, size_t n_elems, void *dst,
                                nc_error *err);

size_t st_write_tensor_bytes(const st_write_tensor *t);

nc_status st_write_file(const char *path, const st_write_tensor *ts, int n, st_fill_fn fill,
                        void *ctx, nc_error *err);

#endif
