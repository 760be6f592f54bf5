/* The one-pass shape of a JSON body (src/serve/serve_jsonshape.c) against
 * jansson's parse of the same text: the values it would build (object keys
 * counted as strings), the string bytes it would hold, and the depth. */
#include <jansson.h>
#include <string.h>

#include "../common/json_tally.h"
#include "../test.h"
#include "serve/serve_jsonshape.h"

static void test_shape_matches_the_parsed_tree(void) {
    static const char *const bodies[] = {
        "{}",
        "[]",
        "[1,-2.5e3,true,false,null,\"s\"]",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}",
        " { \"a\" : [ [ [ 1 ] ] , { \"b\" : { } } ] , \"c\" : \"x\\\"y\\\\\" } ",
        "{\"x\":[{},{},[],[[]],{\"k\":[0,1,2]}],\"t\":\"\\u00e9\\n\"}",
        "{\"prompt\":[1,22,333,4444],\"stop\":[\"a\",\"bb\"],\"seed\":-1}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        json_error_t je;
        json_t *root = json_loads(bodies[i], JSON_DECODE_ANY, &je);
        CHECKF(root, "body %zu: %s", i, je.text);
        json_tally want = {0, 0, 0};
        json_tally_add(root, 1, &want);
        json_decref(root);
        serve_json_shape got;
        serve_json_shape_of(bodies[i], strlen(bodies[i]), &got);
        CHECKF(got.n_values == want.n_values && got.max_depth == want.max_depth,
               "body %zu: %zu values depth %d; jansson %zu values depth %d", i, got.n_values,
               got.max_depth, want.n_values, want.max_depth);
        /* escapes are counted as written, one byte or more per decoded byte */
        CHECKF(got.string_bytes >= want.string_bytes && got.string_bytes <= 6 * want.string_bytes,
               "body %zu: %zu string bytes; jansson %zu", i, got.string_bytes, want.string_bytes);
    }
}

/* A body of 8 MB holding [1,1,...] counts its 4 M values without building
 * them, and a deep one its depth. */
static void test_hostile_shapes_are_counted(void) {
    size_t n = 4000000;
    char *b = malloc(2 * n + 2);
    CHECK(b);
    b[0] = '[';
    for (size_t i = 0; i < n; i++) {
        b[1 + 2 * i] = '1';
        b[2 + 2 * i] = ',';
    }
    b[2 * n] = ']';
    serve_json_shape s;
    serve_json_shape_of(b, 2 * n + 1, &s);
    CHECKF(s.n_values == n + 1 && s.max_depth == 1, "%zu values, depth %d", s.n_values,
           s.max_depth);
    CHECK(serve_json_parse_cost(&s) >= 32 * n);
    memset(b, '[', n);
    memset(b + n, ']', n);
    serve_json_shape_of(b, 2 * n, &s);
    CHECKF(s.max_depth == (int)n && s.n_values == n, "depth %d", s.max_depth);
    free(b);
}

int main(void) {
    RUN(test_shape_matches_the_parsed_tree);
    RUN(test_hostile_shapes_are_counted);
    return nc_test_exit_code();
}
