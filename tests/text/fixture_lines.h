/* Shared by the tests in tests/text/: reads a committed .jsonl fixture (one
 * JSON object per line) and small helpers to pull ids and strings out. */
#ifndef NC_TESTS_TEXT_FIXTURE_LINES_H
#define NC_TESTS_TEXT_FIXTURE_LINES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mmap.h"

typedef struct fixture_rows {
    json_t **rows;
    size_t n;
} fixture_rows;

/* Parses every non-empty line; returns 0 on success. */
static inline int fixture_rows_load(const char *path, fixture_rows *out) {
    char *buf;
    size_t len;
    out->rows = NULL;
    out->n = 0;
    if (nc_read_file(path, &buf, &len, NULL) != NC_OK) return -1;
    size_t cap = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(buf + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - buf) : len;
        if (end > at) {
            json_t *row;
            if (nc_json_parse(buf + at, end - at, path, &row, NULL) != NC_OK) {
                free(buf);
                return -1;
            }
            if (out->n == cap) {
                cap = cap ? 2 * cap : 64;
                out->rows = realloc(out->rows, cap * sizeof *out->rows);
            }
            out->rows[out->n++] = row;
        }
        at = end + 1;
    }
    free(buf);
    return 0;
}

static inline void fixture_rows_free(fixture_rows *r) {
    for (size_t i = 0; i < r->n; i++)
        json_decref(r->rows[i]);
    free(r->rows);
    r->rows = NULL;
    r->n = 0;
}

/* The array field `key` as int32 ids (malloc'ed; *n its length). */
static inline int32_t *fixture_ids(const json_t *row, const char *key, size_t *n) {
    const json_t *a = json_object_get(row, key);
    *n = json_array_size(a);
    int32_t *ids = malloc((*n ? *n : 1) * sizeof *ids);
    for (size_t i = 0; i < *n; i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(a, i));
    return ids;
}

static inline const char *fixture_str(const json_t *row, const char *key, size_t *len) {
    const json_t *s = json_object_get(row, key);
    if (len) *len = json_string_length(s);
    return json_string_value(s);
}

#endif
