/* A JSON Schema compiled into the node graph the constrained-output matcher
 * walks (json_match.h): objects with their properties in schema order,
 * arrays, strings, numbers, integers, booleans, null, enum/const literal
 * sets, anyOf/oneOf whose alternatives start with different characters,
 * and $ref into $defs/definitions (recursion allowed), integers bounded by
 * minimum/maximum (a closed range of at most 1024 values, matched as
 * the set of their texts). Keywords that constrain values in ways the
 * matcher does not enforce (pattern, format, multipleOf, an open or wide
 * range, ...) are refused by name, so output that passes the
 * matcher always validates. After llama.cpp's json-schema-to-grammar, which
 * fixes property order the same way. */
#ifndef NC_GEN_JSON_SCHEMA_H
#define NC_GEN_JSON_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef enum {
    JS_ANY,      /* any JSON value */
    JS_OBJ_ANY,  /* any JSON object */
    JS_OBJECT,   /* properties props[first..first+n), in order */
    JS_ARRAY,    /* items: child; min..max items */
    JS_STRING,   /* any JSON string */
    JS_NUMBER,   /* any JSON number */
    JS_INTEGER,  /* -?(0|[1-9][0-9]*) */
    JS_LITERALS, /* one of lits[first..first+n) (JSON texts: enum, const, true/false, null) */
    JS_UNION     /* one of alts[first..first+n), told apart by their first byte */
} js_kind;

typedef struct js_node {
    js_kind kind;
    int first, n; /* props, lits or alts */
    int child;    /* JS_ARRAY: the items' node */
    int min_items, max_items;
} js_node;

typedef struct js_prop {
    char *key; /* the key's JSON text without its opening quote, with the closing one */
    size_t key_len;
    int node;
    int is_required;
} js_prop;

typedef struct js_lit {
    char *text; /* compact JSON text of the value */
    size_t len;
} js_lit;

typedef struct js_graph {
    js_node *nodes;
    int n_nodes, cap_nodes;
    js_prop *props;
    int n_props, cap_props;
    js_lit *lits;
    int n_lits, cap_lits;
    int *alts;
    int n_alts, cap_alts;
    int root;
} js_graph;

/* Compiles schema_json (a JSON Schema object as text). what names the
 * schema in errors ("response_format.json_schema.schema"). */
nc_status js_compile(const char *schema_json, const char *what, js_graph *g, nc_error *err);

/* The same with the keywords js_compile refuses for being unenforceable
 * (pattern, format, an open integer range, ...) skipped: output keeps the
 * schema's structure, types, enums and required properties, and may break
 * only what was skipped. For a tool's parameters, where refusing the
 * request is not an option the client chose; never for response_format. */
nc_status js_compile_relaxed(const char *schema_json, const char *what, js_graph *g,
                             nc_error *err);

/* Readies g, compiled from schema_json (a tool's parameters), for Qwen3.5's
 * XML call form (jm_grammar.xml_root): stores the root's string enums
 * unquoted, as that form writes them. Returns 1 then; 0 when the form
 * cannot hold the schema exactly (a root that is not an object with
 * properties, a key that is no plain name, an empty string in an enum, a
 * value the call scanner would not read back as the schema's type, by
 * tool_value.h's rule, the scanner's own), and g is unchanged; -1 out of
 * memory (g only fit for js_free). */
int js_xml_call_form(js_graph *g, const char *schema_json);

/* A graph whose root is any JSON object (response_format json_object). */
nc_status js_any_object(js_graph *g, nc_error *err);

void js_free(js_graph *g);

#endif
