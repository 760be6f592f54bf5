/* What jansson built for a JSON text, counted from its tree: values
 * (object keys counted as strings), string bytes, container depth. The
 * reference for the server's one-pass body shape (serve_jsonshape.c), in
 * its test and its fuzz target. Header-only: libFuzzer targets link alone. */
#ifndef NC_TESTS_JSON_TALLY_H
#define NC_TESTS_JSON_TALLY_H

#include <jansson.h>
#include <string.h>

typedef struct json_tally {
    size_t n_values, string_bytes;
    int max_depth;
} json_tally;

/* Adds v (at depth, 1 for the root) and everything under it to t. */
static inline void json_tally_add(const json_t *v, int depth, json_tally *t) {
    t->n_values++;
    if (json_is_string(v)) t->string_bytes += json_string_length(v);
    if (!json_is_object(v) && !json_is_array(v)) return;
    if (depth > t->max_depth) t->max_depth = depth;
    size_t i;
    const char *key;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) json_tally_add(x, depth + 1, t);
    } else {
        json_object_foreach((json_t *)v, key, x) {
            t->n_values++; /* the key */
            t->string_bytes += strlen(key);
            json_tally_add(x, depth + 1, t);
        }
    }
}

#endif
