/* jansson wrapper: parse with located errors, typed field getters. */
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"

nc_status nc_json_load_file(const char *path, json_t **out, nc_error *err) {
    json_error_t je;
    *out = json_load_file(path, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!*out) {
        if (je.line < 1) return nc_fail(err, NC_ERR_IO, "%s: %s", path, je.text);
        return nc_fail(err, NC_ERR_FORMAT, "%s:%d:%d: invalid JSON: %s", path, je.line, je.column,
                       je.text);
    }
    return NC_OK;
}

nc_status nc_json_parse(const char *buf, size_t len, const char *what, json_t **out,
                        nc_error *err) {
    json_error_t je;
    *out = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!*out)
        return nc_fail(err, NC_ERR_FORMAT, "%s:%d:%d: invalid JSON: %s", what, je.line, je.column,
                       je.text);
    return NC_OK;
}

static nc_status get_field(const json_t *obj, const char *key, int required, const char *what,
                           json_t **out, nc_error *err) {
    *out = NULL;
    if (!json_is_object(obj)) return nc_fail(err, NC_ERR_FORMAT, "%s: expected an object", what);
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: missing field '%s'", what, key);
        return NC_OK;
    }
    *out = v;
    return NC_OK;
}

nc_status nc_json_int(const json_t *obj, const char *key, int64_t *out, int required,
                      const char *what, nc_error *err) {
    json_t *v;
    NC_TRY(get_field(obj, key, required, what, &v, err));
    if (!v) return NC_OK;
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return NC_OK;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        /* in range before the cast: converting a double outside int64 is undefined */
        if (d >= -0x1p63 && d < 0x1p63 && d == (double)(int64_t)d) {
            *out = (int64_t)d;
            return NC_OK;
        }
    }
    return nc_fail(err, NC_ERR_FORMAT, "%s: field '%s' must be an integer", what, key);
}

nc_status nc_json_int_in(const json_t *obj, const char *key, int *out, int required, int lo, int hi,
                         const char *what, nc_error *err) {
    int64_t v = *out;
    NC_TRY(nc_json_int(obj, key, &v, required, what, err));
    if (v < lo || v > hi)
        return nc_fail(err, NC_ERR_RANGE, "%s: field '%s' = %lld is outside [%d, %d]", what, key,
                       (long long)v, lo, hi);
    *out = (int)v;
    return NC_OK;
}

nc_status nc_json_num(const json_t *obj, const char *key, double *out, int required,
                      const char *what, nc_error *err) {
    json_t *v;
    NC_TRY(get_field(obj, key, required, what, &v, err));
    if (!v) return NC_OK;
    if (!json_is_number(v))
        return nc_fail(err, NC_ERR_FORMAT, "%s: field '%s' must be a number", what, key);
    *out = json_number_value(v);
    return NC_OK;
}

nc_status nc_json_bool(const json_t *obj, const char *key, int *out, int required, const char *what,
                       nc_error *err) {
    json_t *v;
    NC_TRY(get_field(obj, key, required, what, &v, err));
    if (!v) return NC_OK;
    if (!json_is_boolean(v))
        return nc_fail(err, NC_ERR_FORMAT, "%s: field '%s' must be true or false", what, key);
    *out = json_is_true(v);
    return NC_OK;
}

nc_status nc_json_str(const json_t *obj, const char *key, const char **out, int required,
                      const char *what, nc_error *err) {
    json_t *v;
    NC_TRY(get_field(obj, key, required, what, &v, err));
    if (!v) return NC_OK;
    if (!json_is_string(v))
        return nc_fail(err, NC_ERR_FORMAT, "%s: field '%s' must be a string", what, key);
    *out = json_string_value(v);
    return NC_OK;
}

nc_status nc_json_save(json_t *root, const char *path, int indent, nc_error *err) {
    char *text =
        json_dumps(root, JSON_INDENT(indent) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!text) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    size_t len = strlen(text);
    char *with_nl = realloc(text, len + 2);
    if (!with_nl) {
        free(text);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    }
    with_nl[len] = '\n';
    nc_status st = nc_write_file_atomic(path, with_nl, len + 1, err);
    free(with_nl);
    return st;
}
