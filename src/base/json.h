/* JSON through jansson, with errors that name the file, line and field.
 * Everything that reads config.json, tokenizer.json, safetensors headers or
 * HTTP bodies goes through here so messages look the same everywhere. */
#ifndef NC_BASE_JSON_H
#define NC_BASE_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"

/* Parses a file; on error the message is "path:line:col: reason". */
nc_status nc_json_load_file(const char *path, json_t **out, nc_error *err);

/* Parses a buffer; `what` names it in messages (a file name, "request body"). */
nc_status nc_json_parse(const char *buf, size_t len, const char *what, json_t **out, nc_error *err);

/* Writes root (taking the reference: it is freed) to path atomically, keys
 * in insertion order, `indent` spaces per level, ending with a newline. */
nc_status nc_json_save(json_t *root, const char *path, int indent, nc_error *err);

/* Typed field access. `what` names the document for messages
 * ("config.json: field 'hidden_size' must be an integer"). When the field is
 * absent: returns NC_ERR_NOT_FOUND with a message if `required`, otherwise
 * NC_OK leaving *out untouched (so callers pre-set defaults). A JSON null
 * counts as absent. */
nc_status nc_json_int(const json_t *obj, const char *key, int64_t *out, int required,
                      const char *what, nc_error *err);
/* nc_json_int into an int that must lie in [lo, hi] (NC_ERR_RANGE naming the
 * field otherwise); *out keeps its value when the field is absent. */
nc_status nc_json_int_in(const json_t *obj, const char *key, int *out, int required, int lo, int hi,
                         const char *what, nc_error *err);
nc_status nc_json_num(const json_t *obj, const char *key, double *out, int required,
                      const char *what, nc_error *err);
nc_status nc_json_bool(const json_t *obj, const char *key, int *out, int required, const char *what,
                       nc_error *err);
/* *out points into obj (valid while obj lives). */
nc_status nc_json_str(const json_t *obj, const char *key, const char **out, int required,
                      const char *what, nc_error *err);

#endif
