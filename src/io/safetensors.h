/* safetensors files: an 8-byte little-endian header length, a JSON header
 * mapping tensor names to {dtype, shape, data_offsets}, then the data block.
 * The file is mmapped (or read into memory: st_make_resident) and every header entry is validated (dtype known,
 * shape x dtype size == byte span, span inside the data block, no overlaps)
 * before any tensor is handed out, so callers can trust the pointers. */
#ifndef NC_IO_SAFETENSORS_H
#define NC_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/mmap.h"

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER_BYTES (100u * 1024u * 1024u) /* the reference library's limit */

typedef enum {
    ST_F32,
    ST_F16,
    ST_BF16,
    ST_F64,
    ST_I8,
    ST_U8,
    ST_I16,
    ST_U16,
    ST_I32,
    ST_U32,
    ST_I64,
    ST_U64,
    ST_BOOL,
    ST_F8_E4M3,
    ST_F8_E5M2,
    ST_N_DTYPES
} st_dtype;

typedef struct st_tensor {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t n_elems;
    size_t offset_bytes; /* from the start of the data block */
    size_t size_bytes;
    const void *data; /* into the mmap (NULL until the data block is known) */
    int rewritten;    /* a loader rearranged its bytes (hf_weights_rewritable) */
} st_tensor;

typedef struct st_file {
    char *path;
    nc_mapped_file map;
    st_tensor *tensors; /* sorted by name */
    int n_tensors;
    int writable; /* hf_weights_writable made the resident copy writable */
} st_file;

const char *st_dtype_name(st_dtype t); /* "BF16", ... */
size_t st_dtype_size(st_dtype t);

/* Validates a whole safetensors image held in memory (header and the extent
 * of the data block) and returns its tensors sorted by name, with data
 * pointing into buf. `what` names the file in messages. Free the result with
 * st_tensors_free. */
nc_status st_parse(const uint8_t *buf, size_t size, const char *what, st_tensor **out, int *n_out,
                   nc_error *err);
void st_tensors_free(st_tensor *t, int n);

nc_status st_open(const char *path, st_file **out, nc_error *err);
void st_close(st_file *f);

/* Moves an open file's bytes from the mmap into private memory
 * (nc_load_file_resident: huge pages, the data block 64-byte aligned) and
 * points its tensors there. The header is not parsed again: the file must
 * not have changed since st_open, which the size check catches in part.
 * drop_page_cache: as nc_load_file_resident. */
nc_status st_make_resident(st_file *f, int drop_page_cache, nc_error *err);

/* NULL when absent. */
const st_tensor *st_find(const st_file *f, const char *name);

#endif
