/* What both kinds of ANE bundle (Qwen3: lower/qwen3_compile.h; encoders:
 * lower/modernbert_compile.h) share on disk: the build folder (a temporary
 * sibling renamed into place, so a failure leaves nothing and an older
 * bundle is replaced only once the new one is whole), the copied checkpoint
 * files, and the pieces of manifest.json both writers and readers use (the
 * format header, I/O lists, checked field readers). */
#ifndef NC_BUNDLE_BUNDLE_IO_H
#define NC_BUNDLE_BUNDLE_IO_H

#include <stddef.h>

#include "base/json.h"
#include "bundle/manifest.h"

/* --- the bundle folder ----------------------------------------------------- */

/* Removes a folder tree (for failed compiles and tests); missing is fine. */
void lower_remove_tree(const char *dir);
/* Bytes of the regular files below dir (the bundle's size). */
size_t lower_tree_bytes(const char *dir);
/* NC_OK when `out` is free or an older bundle (a folder with manifest.json,
 * replaced at the end); any other existing path is refused. */
nc_status lower_bundle_check_out(const char *out, nc_error *err);
/* Creates the empty build folder "out.tmp.<pid>" into tmp (cap bytes);
 * tmp is "" when it could not be created. */
nc_status lower_bundle_make_tmp(const char *out, char *tmp, size_t cap, nc_error *err);
/* Publishes tmp as out: a fresh name, or an older bundle replaced. */
nc_status lower_bundle_publish(const char *tmp, const char *out, nc_error *err);
/* Copies from_dir/name to to_dir/name; a missing source is an error only
 * when `required`. */
nc_status lower_copy_file(const char *from_dir, const char *to_dir, const char *name, int required,
                          nc_error *err);

/* --- manifest.json --------------------------------------------------------- */

/* Sets "format", "format_version" and "nectar_version" on root. */
void lower_json_set_header(json_t *root);
/* Checks root is an object of this format and version. */
nc_status lower_json_check_header(const json_t *root, const char *what, nc_error *err);
/* The "weights_fp16" object; `from` (the source dtypes) is left out when NULL. */
json_t *lower_json_fp16_stats(const lower_fp16_stats *s, const char *from);
/* One entry of "programs": path, weights, layer (when >= 0), role and the
 * functions with name, [batch: the first input's dim 0, when with_batch],
 * seq, inputs and outputs. */
json_t *lower_json_program(const lower_program_info *pi, const char *role, int with_batch);
/* Writes root (consumed) to path atomically. */
nc_status lower_json_write(json_t *root, const char *path, nc_error *err);
/* Reads BUNDLE/manifest.json into *text (free it); path receives its name. */
nc_status lower_manifest_text(const char *bundle_dir, char *path, size_t path_cap, char **text,
                              size_t *len, nc_error *err);

/* Member `key` of parent, an object: replaced by (or created as) an empty
 * object when it is something else or absent. */
json_t *lower_json_child(json_t *parent, const char *key);
/* Required integer field in [lo, hi]. */
nc_status lower_json_int_in(const json_t *o, const char *key, int lo, int hi, int *out,
                            const char *what, nc_error *err);
/* Required string field copied into buf (cap bytes); too long is an error. */
nc_status lower_json_str_into(const json_t *o, const char *key, char *buf, size_t cap,
                              const char *what, nc_error *err);
/* Member `key`, which must be an array (is_array) or an object; NULL with
 * err filled otherwise. */
const json_t *lower_json_member(const json_t *o, const char *key, int is_array, const char *what,
                                nc_error *err);
/* A function's "inputs" and "outputs" lists into fi: each entry a name, a
 * dtype and a shape of rank min_rank..max_rank, dimensions in [1, max_dim]. */
nc_status lower_json_read_fn_io(const json_t *fo, lower_fn_info *fi, int min_rank, int max_rank,
                                int64_t max_dim, const char *what, nc_error *err);

#endif
