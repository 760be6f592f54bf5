/* Fuzz target: the one-pass shape of a request body (src/serve/
 * serve_jsonshape.c), which bounds and prices the parse before jansson
 * runs. Input: a body. Whatever the bytes, the pass ends without reading
 * past them; when jansson parses the body (the server's flags), the pass
 * must have counted exactly the values jansson built (object keys
 * included) and their depth, and at least the string bytes it holds. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json_tally.h"
#include "serve/serve_jsonshape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *body = malloc(size ? size : 1);
    if (!body) return 0;
    memcpy(body, data, size);
    serve_json_shape s;
    serve_json_shape_of(body, size, &s);
    json_error_t je;
    json_t *root = json_loadb(body, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (root) {
        json_tally t = {0, 0, 0};
        json_tally_add(root, 1, &t);
        if (s.n_values != t.n_values || s.max_depth != t.max_depth ||
            s.string_bytes < t.string_bytes)
            abort();
        json_decref(root);
    }
    free(body);
    return 0;
}
