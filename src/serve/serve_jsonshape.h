/* The shape of a JSON request body, found by one pass over its bytes
 * before anything is built: jansson spends about 40 bytes per value (a
 * body of 8 MB holding [1,1,1,...] becomes 160 MB of tree), and has depth
 * and size flags but no caps. The server refuses a body over the caps, and
 * admits the rest by their estimated parse cost (serve_http.c). The pass
 * does not validate: a malformed body gets an estimate and then jansson's
 * own error. */
#ifndef NC_SERVE_JSONSHAPE_H
#define NC_SERVE_JSONSHAPE_H

#include <stddef.h>

typedef struct serve_json_shape {
    size_t n_values;     /* objects, arrays, strings (keys too), numbers, literals */
    size_t string_bytes; /* bytes inside strings, quotes excluded */
    int max_depth;       /* deepest nesting of objects and arrays */
} serve_json_shape;

void serve_json_shape_of(const char *body, size_t len, serve_json_shape *out);

/* Bytes jansson and the request are expected to hold while len bytes of
 * this shape are parsed (the body itself not included). */
size_t serve_json_parse_cost(const serve_json_shape *s);

#endif
