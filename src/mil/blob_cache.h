/* The weight files a program's BLOBFILE values refer to, opened on first use
 * and kept mapped until the program is freed. Paths resolve `@model_path`
 * against the program's model folder. Internal to src/mil. */
#ifndef NC_MIL_BLOB_CACHE_H
#define NC_MIL_BLOB_CACHE_H

#include "mil/ir.h"
#include "mil/mil_blob.h"

mil_blob_cache *mil_blob_cache_new(void);
void mil_blob_cache_free(mil_blob_cache *c);

/* The file path a BLOBFILE path names: "@model_path/x" -> "<model_dir>/x";
 * other relative paths are taken relative to model_dir too. Writes into buf;
 * fails when @model_path is used without a model folder or buf is short. */
nc_status mil_blob_resolve_path(const mil_program *prog, const char *blob_path, char *buf,
                                size_t size, nc_error *err);

/* The opened (and header-validated) file for a BLOBFILE path. */
nc_status mil_blob_cache_get(const mil_program *prog, const char *blob_path,
                             const mil_blob_file **out, nc_error *err);

#endif
