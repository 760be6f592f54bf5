/* JSON Schema -> node graph (see json_schema.h). Nodes are addressed by
 * index, so a $ref can point at a node still being compiled; a second pass
 * checks that the alternatives of each union start with different bytes
 * (the matcher is deterministic: one byte picks the alternative). */
#include "gen/json_schema.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/tool_value.h"

#define JS_MAX_REFS 256
#define JS_MAX_ENUM 1024

typedef struct ctx {
    js_graph *g;
    const json_t *root;
    const char *what;
    nc_error *err;
    char *ref_names[JS_MAX_REFS];
    int ref_nodes[JS_MAX_REFS];
    int n_refs;
    int depth;
    int relaxed; /* js_compile_relaxed: unenforceable keywords are skipped */
} ctx;

/* Keywords that would constrain values beyond what the matcher enforces. */
static const char *const refused[] = {"pattern",
                                      "format",
                                      "minimum",
                                      "maximum",
                                      "exclusiveMinimum",
                                      "exclusiveMaximum",
                                      "multipleOf",
                                      "patternProperties",
                                      "propertyNames",
                                      "uniqueItems",
                                      "contains",
                                      "minContains",
                                      "maxContains",
                                      "not",
                                      "if",
                                      "then",
                                      "else",
                                      "dependentRequired",
                                      "dependentSchemas",
                                      "minProperties",
                                      "maxProperties",
                                      "prefixItems",
                                      "unevaluatedProperties",
                                      "unevaluatedItems"};

static int grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int new_node(ctx *c, js_kind kind) {
    js_graph *g = c->g;
    if (grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes)) return -1;
    g->nodes[g->n_nodes] = (js_node){kind, 0, 0, -1, 0, -1};
    return g->n_nodes++;
}

static nc_status oom(ctx *c) {
    return nc_fail(c->err, NC_ERR_NOMEM, "%s: out of memory", c->what);
}

static int add_lit(ctx *c, const json_t *v) {
    js_graph *g = c->g;
    if (grow((void **)&g->lits, &g->cap_lits, g->n_lits + 1, sizeof *g->lits)) return -1;
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!t) return -1;
    g->lits[g->n_lits] = (js_lit){t, strlen(t)};
    return g->n_lits++;
}

static nc_status compile(ctx *c, const json_t *s, int *out);

/* v is a value of JSON Schema type name. */
static int has_type(const json_t *v, const char *name) {
    if (!strcmp(name, "integer"))
        return json_is_integer(v) ||
               (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v));
    if (!strcmp(name, "number")) return json_is_number(v);
    if (!strcmp(name, "string")) return json_is_string(v);
    if (!strcmp(name, "boolean")) return json_is_boolean(v);
    if (!strcmp(name, "null")) return json_is_null(v);
    if (!strcmp(name, "object")) return json_is_object(v);
    if (!strcmp(name, "array")) return json_is_array(v);
    return 0;
}

/* An enum or const value must also satisfy the schema's type (a string or
 * a list of names): output is one of the values, and one of another type
 * would not validate. i: the enum index ((size_t)-1 for const). */
static nc_status check_literal_type(ctx *c, const char *keyword, size_t i, const json_t *v,
                                    const json_t *type) {
    if (!type) return NC_OK;
    int ok = json_is_string(type) && has_type(v, json_string_value(type));
    size_t k;
    json_t *t;
    json_array_foreach(type, k, t) ok |= json_is_string(t) && has_type(v, json_string_value(t));
    if (ok) return NC_OK;
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    char *types = json_dumps(type, JSON_COMPACT | JSON_ENCODE_ANY);
    char where[32] = "";
    if (i != (size_t)-1) snprintf(where, sizeof where, "[%zu]", i);
    nc_status st = nc_fail(c->err, NC_ERR_INVALID, "%s: '%s%s' value %.60s is not of type %.60s",
                           c->what, keyword, where, text ? text : "?", types ? types : "?");
    free(text);
    free(types);
    return st;
}

/* A node of literal values: enum's list, const's one, or a type's. */
static nc_status literals(ctx *c, const json_t *const *vals, size_t n, int *out) {
    int node = new_node(c, JS_LITERALS);
    if (node < 0) return oom(c);
    c->g->nodes[node].first = c->g->n_lits;
    for (size_t i = 0; i < n; i++)
        if (add_lit(c, vals[i]) < 0) return oom(c);
    c->g->nodes[node].n = (int)n;
    *out = node;
    return NC_OK;
}

/* A property's key as the matcher wants it: its JSON text without the
 * opening quote. */
static int set_key(js_prop *p, const char *key) {
    json_t *ks = json_string(key);
    char *kt = ks ? json_dumps(ks, JSON_ENCODE_ANY) : NULL;
    json_decref(ks);
    if (!kt) return -1;
    p->key = strdup(kt + 1);
    p->key_len = strlen(kt) - 1;
    free(kt);
    return p->key ? 0 : -1;
}

/* required[k] names a key that properties lacks, for the first time. */
static int is_extra_required(const json_t *props, const json_t *req, size_t k) {
    const char *name = json_string_value(json_array_get(req, k));
    if (json_object_get(props, name)) return 0;
    for (size_t i = 0; i < k; i++)
        if (!strcmp(json_string_value(json_array_get(req, i)), name)) return 0;
    return 1;
}

/* Checks `required` (an array of names) and counts the names properties
 * does not describe: output must still hold them, so they are generated
 * with any value, unless additionalProperties: false forbids them, which
 * no object could satisfy. */
static nc_status required_extra(ctx *c, const json_t *props, const json_t *ap, const json_t *req,
                                int *n_extra) {
    *n_extra = 0;
    if (!req) return NC_OK;
    if (!json_is_array(req))
        return nc_fail(c->err, NC_ERR_INVALID, "%s: 'required' must be an array of names", c->what);
    for (size_t k = 0; k < json_array_size(req); k++) {
        const json_t *r = json_array_get(req, k);
        if (!json_is_string(r))
            return nc_fail(c->err, NC_ERR_INVALID, "%s: 'required[%zu]' is not a string", c->what,
                           k);
        if (!is_extra_required(props, req, k)) continue;
        if (json_is_false(ap))
            return nc_fail(c->err, NC_ERR_INVALID,
                           "%s: 'required' names '%.100s', which is not in 'properties' while "
                           "additionalProperties is false: no object can have it",
                           c->what, json_string_value(r));
        ++*n_extra;
    }
    return NC_OK;
}

static nc_status simple_type(ctx *c, const json_t *s, const char *type, int *out) {
    if (!strcmp(type, "string")) {
        /* minLength/maxLength count characters (code points), as JSON
         * Schema does; an escape or a UTF-8 sequence is one. */
        if ((*out = new_node(c, JS_STRING)) < 0) return oom(c);
        json_t *mn = json_object_get(s, "minLength"), *mx = json_object_get(s, "maxLength");
        js_node *nd = &c->g->nodes[*out];
        nd->min_items = json_is_integer(mn) ? (int)json_integer_value(mn) : 0;
        nd->max_items = json_is_integer(mx) ? (int)json_integer_value(mx) : -1;
        if (nd->min_items < 0 || nd->min_items > 60000 || nd->max_items > 60000 ||
            (nd->max_items >= 0 && nd->max_items < nd->min_items))
            return nc_fail(c->err, NC_ERR_INVALID, "%s: minLength/maxLength out of range", c->what);
        return NC_OK;
    }
    if (!strcmp(type, "number"))
        *out = new_node(c, JS_NUMBER);
    else if (!strcmp(type, "integer"))
        *out = new_node(c, JS_INTEGER);
    else if (!strcmp(type, "boolean") || !strcmp(type, "null")) {
        json_t *t = json_true(), *f = json_false(), *z = json_null();
        const json_t *tf[2] = {f, t}, *nl[1] = {z};
        nc_status st = type[0] == 'b' ? literals(c, tf, 2, out) : literals(c, nl, 1, out);
        return st;
    } else if (!strcmp(type, "array")) {
        const json_t *items = json_object_get(s, "items");
        if (items && json_is_array(items))
            return nc_fail(c->err, NC_ERR_INVALID, "%s: tuple 'items' is not supported", c->what);
        int node = new_node(c, JS_ARRAY);
        if (node < 0) return oom(c);
        int child = -1;
        if (items)
            NC_TRY(compile(c, items, &child));
        else if ((child = new_node(c, JS_ANY)) < 0)
            return oom(c);
        js_node *nd = &c->g->nodes[node];
        nd->child = child;
        json_t *mn = json_object_get(s, "minItems"), *mx = json_object_get(s, "maxItems");
        nd->min_items = json_is_integer(mn) ? (int)json_integer_value(mn) : 0;
        nd->max_items = json_is_integer(mx) ? (int)json_integer_value(mx) : -1;
        if (nd->min_items < 0 || nd->min_items > 4096 || nd->max_items > 4096 ||
            (nd->max_items >= 0 && nd->max_items < nd->min_items))
            return nc_fail(c->err, NC_ERR_INVALID, "%s: minItems/maxItems out of range", c->what);
        *out = node;
        return NC_OK;
    } else if (!strcmp(type, "object")) {
        const json_t *props = json_object_get(s, "properties");
        const json_t *ap = json_object_get(s, "additionalProperties");
        const json_t *req = json_object_get(s, "required");
        int n_extra;
        NC_TRY(required_extra(c, props, ap, req, &n_extra));
        if (json_object_size(props) + (size_t)n_extra == 0) {
            *out = new_node(c, JS_OBJ_ANY);
            if (json_is_false(ap) && *out >= 0)
                c->g->nodes[*out] = (js_node){JS_OBJECT, 0, 0, -1, 0, -1};
            return *out < 0 ? oom(c) : NC_OK;
        }
        if (ap && json_is_object(ap) && json_object_size(ap) > 0)
            return nc_fail(c->err, NC_ERR_INVALID,
                           "%s: additionalProperties with a schema is not supported", c->what);
        int node = new_node(c, JS_OBJECT);
        if (node < 0) return oom(c);
        /* Properties take consecutive slots: reserve them before compiling
         * their values (which may add properties of their own). */
        int first = c->g->n_props, n = (int)json_object_size(props) + n_extra;
        if (grow((void **)&c->g->props, &c->g->cap_props, first + n, sizeof *c->g->props))
            return oom(c);
        c->g->n_props += n;
        memset(c->g->props + first, 0, (size_t)n * sizeof *c->g->props);
        c->g->nodes[node].first = first;
        c->g->nodes[node].n = n;
        const char *key;
        json_t *v;
        int i = 0;
        json_object_foreach((json_t *)props, key, v) {
            int is_req = 0;
            size_t k;
            json_t *r;
            json_array_foreach(req, k, r) if (json_is_string(r) &&
                                              !strcmp(json_string_value(r), key)) is_req = 1;
            int child;
            nc_status st = compile(c, v, &child);
            js_prop *p = &c->g->props[first + i];
            if (set_key(p, key) != 0) return oom(c);
            if (st != NC_OK) return st;
            p->node = child;
            p->is_required = is_req;
            i++;
        }
        /* Required keys the properties do not describe: any value. */
        size_t k;
        json_t *r;
        json_array_foreach(req, k, r) {
            if (!is_extra_required(props, req, k)) continue;
            int child = new_node(c, JS_ANY);
            js_prop *p = &c->g->props[first + i++];
            if (child < 0 || set_key(p, json_string_value(r)) != 0) return oom(c);
            p->node = child;
            p->is_required = 1;
        }
        *out = node;
        return NC_OK;
    } else {
        return nc_fail(c->err, NC_ERR_INVALID, "%s: unknown type '%s'", c->what, type);
    }
    return *out < 0 ? oom(c) : NC_OK;
}

static nc_status union_of(ctx *c, const int *alts, int n, int *out) {
    int node = new_node(c, JS_UNION);
    js_graph *g = c->g;
    if (node < 0 || grow((void **)&g->alts, &g->cap_alts, g->n_alts + n, sizeof *g->alts))
        return oom(c);
    g->nodes[node].first = g->n_alts;
    g->nodes[node].n = n;
    memcpy(g->alts + g->n_alts, alts, (size_t)n * sizeof *alts);
    g->n_alts += n;
    *out = node;
    return NC_OK;
}

static nc_status resolve_ref(ctx *c, const char *ref, int *out) {
    for (int i = 0; i < c->n_refs; i++)
        if (!strcmp(c->ref_names[i], ref)) {
            *out = c->ref_nodes[i];
            return NC_OK;
        }
    const char *name = NULL, *section = NULL;
    if (!strncmp(ref, "#/$defs/", 8))
        section = "$defs", name = ref + 8;
    else if (!strncmp(ref, "#/definitions/", 14))
        section = "definitions", name = ref + 14;
    const json_t *target =
        section ? json_object_get(json_object_get(c->root, section), name) : NULL;
    if (!strcmp(ref, "#")) target = c->root;
    if (!target)
        return nc_fail(c->err, NC_ERR_INVALID, "%s: $ref '%.100s' not found", c->what, ref);
    if (c->n_refs == JS_MAX_REFS)
        return nc_fail(c->err, NC_ERR_INVALID, "%s: too many $ref targets", c->what);
    /* The target compiles into a one-alternative union, registered first,
     * so a reference inside it finds it. */
    int node = new_node(c, JS_UNION);
    if (node < 0) return oom(c);
    c->ref_names[c->n_refs] = strdup(ref);
    if (!c->ref_names[c->n_refs]) return oom(c);
    c->ref_nodes[c->n_refs++] = node;
    int inner;
    NC_TRY(compile(c, target, &inner));
    js_graph *g = c->g;
    if (grow((void **)&g->alts, &g->cap_alts, g->n_alts + 1, sizeof *g->alts)) return oom(c);
    g->nodes[node].first = g->n_alts;
    g->nodes[node].n = 1;
    g->alts[g->n_alts++] = inner;
    *out = node;
    return NC_OK;
}

static int is_bound_keyword(const char *k) {
    return !strcmp(k, "minimum") || !strcmp(k, "maximum") || !strcmp(k, "exclusiveMinimum") ||
           !strcmp(k, "exclusiveMaximum");
}

static int has_bounds(const json_t *s) {
    return json_object_get(s, "minimum") || json_object_get(s, "maximum") ||
           json_object_get(s, "exclusiveMinimum") || json_object_get(s, "exclusiveMaximum");
}

/* One bound of an integer schema: the tightest of minimum (maximum) and
 * the exclusive one (draft 6+: a number), rounded inward; *set = 0 when
 * neither is given. */
static nc_status integer_bound(ctx *c, const json_t *s, int upper, long long *v, int *set) {
    const char *names[2] = {upper ? "maximum" : "minimum",
                            upper ? "exclusiveMaximum" : "exclusiveMinimum"};
    *set = 0;
    for (int k = 0; k < 2; k++) {
        const json_t *b = json_object_get(s, names[k]);
        if (!b) continue;
        if (!json_is_number(b) || fabs(json_number_value(b)) > 1e15)
            return nc_fail(c->err, NC_ERR_INVALID, "%s: '%s' must be a number within 1e15",
                           c->what, names[k]);
        double x = json_number_value(b);
        double r = upper ? floor(x) : ceil(x);
        if (k == 1 && r == x) r += upper ? -1 : 1; /* exclusive of an integer */
        long long ll = (long long)r;
        if (!*set || (upper ? ll < *v : ll > *v)) *v = ll;
        *set = 1;
    }
    return NC_OK;
}

/* An integer with minimum/maximum: the matcher enforces a closed range as
 * the set of its values' texts (a literal set, as enum), so a range of at
 * most JS_MAX_ENUM integers; a wider or open one is refused by name. */
static nc_status integer_range(ctx *c, const json_t *s, int *out) {
    long long lo = 0, hi = 0;
    int has_lo, has_hi;
    NC_TRY(integer_bound(c, s, 0, &lo, &has_lo));
    NC_TRY(integer_bound(c, s, 1, &hi, &has_hi));
    if (!has_lo || !has_hi || hi - lo >= JS_MAX_ENUM) {
        const char *k = !has_hi ? (json_object_get(s, "minimum") ? "minimum" : "exclusiveMinimum")
                                : (json_object_get(s, "maximum") ? "maximum" : "exclusiveMaximum");
        return nc_fail(c->err, NC_ERR_INVALID,
                       "%s: keyword '%s' is supported on an integer only as a closed range of at "
                       "most %d values (minimum and maximum both given)",
                       c->what, k, JS_MAX_ENUM);
    }
    if (hi < lo)
        return nc_fail(c->err, NC_ERR_INVALID,
                       "%s: no integer lies between minimum %lld and maximum %lld", c->what, lo, hi);
    int node = new_node(c, JS_LITERALS);
    if (node < 0) return oom(c);
    c->g->nodes[node].first = c->g->n_lits;
    for (long long v = lo; v <= hi; v++) {
        json_t *jv = json_integer(v);
        int at = jv ? add_lit(c, jv) : -1;
        json_decref(jv);
        if (at < 0) return oom(c);
    }
    c->g->nodes[node].n = (int)(hi - lo + 1);
    *out = node;
    return NC_OK;
}

static nc_status compile(ctx *c, const json_t *s, int *out) {
    if (++c->depth > 64) return nc_fail(c->err, NC_ERR_INVALID, "%s: nested too deeply", c->what);
    nc_status st = NC_OK;
    if (json_is_true(s) || (json_is_object(s) && json_object_size(s) == 0)) {
        *out = new_node(c, JS_ANY);
        st = *out < 0 ? oom(c) : NC_OK;
        c->depth--;
        return st;
    }
    if (!json_is_object(s))
        return nc_fail(c->err, NC_ERR_INVALID, "%s: a schema must be an object", c->what);
    const json_t *type0 = json_object_get(s, "type");
    int int_range = json_is_string(type0) && !strcmp(json_string_value(type0), "integer") &&
                    !json_object_get(s, "enum") && !json_object_get(s, "const");
    for (size_t i = 0; i < sizeof refused / sizeof *refused && !c->relaxed; i++)
        if (json_object_get(s, refused[i]) && !(int_range && is_bound_keyword(refused[i])))
            return nc_fail(c->err, NC_ERR_INVALID, "%s: keyword '%s' is not supported", c->what,
                           refused[i]);
    if (int_range && has_bounds(s)) {
        st = integer_range(c, s, out);
        if (st != NC_OK && c->relaxed) st = simple_type(c, s, "integer", out);
        c->depth--;
        return st;
    }
    const json_t *ref = json_object_get(s, "$ref"), *en = json_object_get(s, "enum");
    const json_t *cn = json_object_get(s, "const"), *type = json_object_get(s, "type");
    const json_t *any = json_object_get(s, "anyOf");
    if (!any) any = json_object_get(s, "oneOf");
    const json_t *all = json_object_get(s, "allOf");
    if (ref) {
        if (!json_is_string(ref)) return nc_fail(c->err, NC_ERR_INVALID, "%s: bad $ref", c->what);
        st = resolve_ref(c, json_string_value(ref), out);
    } else if (en) {
        if (!json_is_array(en) || json_array_size(en) == 0)
            return nc_fail(c->err, NC_ERR_INVALID, "%s: enum must be a non-empty array", c->what);
        if (json_array_size(en) > JS_MAX_ENUM)
            return nc_fail(c->err, NC_ERR_INVALID,
                           "%s: enum has %zu values; at most %d are supported (the matcher scans "
                           "them at every byte)",
                           c->what, json_array_size(en), JS_MAX_ENUM);
        const json_t *vals[JS_MAX_ENUM];
        for (size_t i = 0; i < json_array_size(en); i++) {
            vals[i] = json_array_get(en, i);
            NC_TRY(check_literal_type(c, "enum", i, vals[i], type));
        }
        st = literals(c, vals, json_array_size(en), out);
    } else if (cn) {
        NC_TRY(check_literal_type(c, "const", (size_t)-1, cn, type));
        st = literals(c, &cn, 1, out);
    } else if (any || (all && json_array_size(all) == 1)) {
        const json_t *list = any ? any : all;
        size_t n = json_array_size(list);
        if (n == 0 || n > 64)
            return nc_fail(c->err, NC_ERR_INVALID, "%s: anyOf needs 1-64 schemas", c->what);
        int alts[64];
        for (size_t i = 0; i < n; i++)
            NC_TRY(compile(c, json_array_get(list, i), &alts[i]));
        st = n == 1 ? ((*out = alts[0]), NC_OK) : union_of(c, alts, (int)n, out);
    } else if (all) {
        return nc_fail(c->err, NC_ERR_INVALID, "%s: allOf with several schemas is not supported",
                       c->what);
    } else if (json_is_string(type)) {
        st = simple_type(c, s, json_string_value(type), out);
    } else if (json_is_array(type) && json_array_size(type) > 0 && json_array_size(type) <= 7) {
        int alts[8];
        size_t n = json_array_size(type);
        for (size_t i = 0; i < n; i++) {
            const json_t *t = json_array_get(type, i);
            if (!json_is_string(t))
                return nc_fail(c->err, NC_ERR_INVALID, "%s: type must name types", c->what);
            NC_TRY(simple_type(c, s, json_string_value(t), &alts[i]));
        }
        st = n == 1 ? ((*out = alts[0]), NC_OK) : union_of(c, alts, (int)n, out);
    } else if (type) {
        return nc_fail(c->err, NC_ERR_INVALID, "%s: type must be a string or a list", c->what);
    } else if (json_object_get(s, "properties") || json_object_get(s, "required")) {
        st = simple_type(c, s, "object", out);
    } else {
        *out = new_node(c, JS_ANY); /* no constraint that the matcher would need */
        st = *out < 0 ? oom(c) : NC_OK;
    }
    c->depth--;
    return st;
}

/* The bytes a value of node can start with, as a 256-bit set. */
static void first_bytes(const js_graph *g, int node, uint8_t set[32], int depth) {
    static const char *const any = "{[\"-0123456789tfn";
    const js_node *nd = &g->nodes[node];
    const char *chars = NULL;
    switch (nd->kind) {
    case JS_ANY:
        chars = any;
        break;
    case JS_OBJ_ANY:
    case JS_OBJECT:
        chars = "{";
        break;
    case JS_ARRAY:
        chars = "[";
        break;
    case JS_STRING:
        chars = "\"";
        break;
    case JS_NUMBER:
    case JS_INTEGER:
        chars = "-0123456789";
        break;
    case JS_LITERALS:
        for (int i = 0; i < nd->n; i++) {
            unsigned char b = (unsigned char)g->lits[nd->first + i].text[0];
            set[b / 8] |= (uint8_t)(1u << (b % 8));
        }
        return;
    case JS_UNION:
        if (depth > 64) return;
        for (int i = 0; i < nd->n; i++)
            first_bytes(g, g->alts[nd->first + i], set, depth + 1);
        return;
    }
    for (const char *p = chars; *p; p++)
        set[(unsigned char)*p / 8] |= (uint8_t)(1u << ((unsigned char)*p % 8));
}

static nc_status check_unions(const js_graph *g, const char *what, nc_error *err) {
    for (int i = 0; i < g->n_nodes; i++) {
        const js_node *nd = &g->nodes[i];
        if (nd->kind != JS_UNION) continue;
        uint8_t seen[32] = {0};
        for (int k = 0; k < nd->n; k++) {
            uint8_t set[32] = {0};
            first_bytes(g, g->alts[nd->first + k], set, 0);
            for (int b = 0; b < 32; b++)
                if (set[b] & seen[b])
                    return nc_fail(err, NC_ERR_INVALID,
                                   "%s: anyOf/oneOf alternatives (or a type list) must start with "
                                   "different characters (e.g. a string and null), not two objects",
                                   what);
            for (int b = 0; b < 32; b++)
                seen[b] |= set[b];
        }
    }
    return NC_OK;
}

/* A union reachable from itself through unions alone (a $ref to itself,
 * `a` -> `b` -> `a`, anyOf holding its own $ref) stands for no value: the
 * matcher would loop without reading a byte. color: 0 unseen, 1 on the
 * path, 2 done. Returns the node that closes a cycle, or -1. */
static int union_cycle(const js_graph *g, int node, unsigned char *color) {
    if (color[node] == 2) return -1;
    if (color[node] == 1) return node;
    color[node] = 1;
    const js_node *nd = &g->nodes[node];
    for (int k = 0; k < nd->n; k++) {
        int alt = g->alts[nd->first + k];
        if (g->nodes[alt].kind != JS_UNION) continue;
        int at = union_cycle(g, alt, color);
        if (at >= 0) return at;
    }
    color[node] = 2;
    return -1;
}

static nc_status check_cycles(const ctx *c) {
    const js_graph *g = c->g;
    unsigned char *color = calloc((size_t)g->n_nodes + 1, 1);
    if (!color) return nc_fail(c->err, NC_ERR_NOMEM, "%s: out of memory", c->what);
    int at = -1;
    for (int i = 0; i < g->n_nodes && at < 0; i++)
        if (g->nodes[i].kind == JS_UNION) at = union_cycle(g, i, color);
    free(color);
    if (at < 0) return NC_OK;
    const char *name = "anyOf";
    for (int i = 0; i < c->n_refs; i++)
        if (c->ref_nodes[i] == at) name = c->ref_names[i];
    return nc_fail(c->err, NC_ERR_INVALID,
                   "%s: $ref cycle: '%.100s' refers back to itself without a value in between, "
                   "so no JSON text matches it",
                   c->what, name);
}

static nc_status compile_text(const char *schema_json, const char *what, int relaxed,
                              js_graph *g, nc_error *err) {
    memset(g, 0, sizeof *g);
    json_error_t je;
    json_t *root = json_loads(schema_json, 0, &je);
    if (!root) return nc_fail(err, NC_ERR_INVALID, "%s: invalid JSON: %s", what, je.text);
    ctx c = {g, root, what, err, {0}, {0}, 0, 0, relaxed};
    nc_status st = compile(&c, root, &g->root);
    if (st == NC_OK) st = check_cycles(&c);
    if (st == NC_OK) st = check_unions(g, what, err);
    for (int i = 0; i < c.n_refs; i++)
        free(c.ref_names[i]);
    json_decref(root);
    if (st != NC_OK) js_free(g);
    return st;
}

nc_status js_compile(const char *schema_json, const char *what, js_graph *g, nc_error *err) {
    return compile_text(schema_json, what, 0, g, err);
}

nc_status js_compile_relaxed(const char *schema_json, const char *what, js_graph *g,
                             nc_error *err) {
    return compile_text(schema_json, what, 1, g, err);
}

/* A property's key as an XML name: plain characters only. */
static int plain_key(const js_prop *p) {
    if (p->key_len < 2) return 0;
    for (size_t i = 0; i + 1 < p->key_len; i++)
        if (strchr("\\<>\"", p->key[i]) || (unsigned char)p->key[i] < 0x20) return 0;
    return 1;
}

/* The schema type of a property, as the scanner looks it up. */
static const char *prop_type(const json_t *schema, const js_prop *p) {
    char name[256];
    size_t n = p->key_len - 1 < sizeof name - 1 ? p->key_len - 1 : sizeof name - 1;
    memcpy(name, p->key, n);
    name[n] = '\0';
    return gen_tool_value_type(schema, name);
}

/* Appends node's string literals, decoded (raw text), as a new node. */
static int unquoted_copy(js_graph *g, int node) {
    js_node nd = g->nodes[node];
    if (grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes) ||
        grow((void **)&g->lits, &g->cap_lits, g->n_lits + nd.n, sizeof *g->lits))
        return -1;
    int first = g->n_lits;
    for (int i = 0; i < nd.n; i++) {
        json_error_t je;
        json_t *v = json_loadb(g->lits[nd.first + i].text, g->lits[nd.first + i].len,
                               JSON_DECODE_ANY, &je);
        const char *raw = json_string_value(v);
        size_t len = json_string_length(v);
        char *t = raw ? malloc(len + 1) : NULL;
        if (t) memcpy(t, raw, len + 1);
        json_decref(v);
        if (!t) return -1;
        g->lits[g->n_lits++] = (js_lit){t, len};
    }
    g->nodes[g->n_nodes] = (js_node){JS_LITERALS, first, nd.n, -1, 0, -1};
    return g->n_nodes++;
}

/* A root property in the XML form: 1 raw or JSON as it is, 2 an enum of
 * strings to store unquoted, 0 not held exactly. */
static int xml_value_form(const js_graph *g, const json_t *schema, const js_prop *p) {
    const js_node *nd = &g->nodes[p->node];
    if (!plain_key(p)) return 0;
    if (nd->kind == JS_STRING) return 1;
    if (nd->kind == JS_LITERALS && nd->n > 0 && g->lits[nd->first].text[0] == '"') {
        for (int i = 0; i < nd->n; i++)
            if (g->lits[nd->first + i].text[0] != '"' || g->lits[nd->first + i].len < 3 ||
                strstr(g->lits[nd->first + i].text, "</parameter>"))
                return 0;
        return 2;
    }
    /* any other value is JSON text, which the scanner reads as JSON only
       when the property's type says so (the scanner's own rule) */
    return gen_tool_value_is_json(prop_type(schema, p)) &&
           (nd->kind == JS_LITERALS || nd->kind == JS_INTEGER || nd->kind == JS_NUMBER ||
            nd->kind == JS_OBJECT || nd->kind == JS_OBJ_ANY || nd->kind == JS_ARRAY);
}

int js_xml_call_form(js_graph *g, const char *schema_json) {
    if (g->nodes[g->root].kind != JS_OBJECT) return 0;
    json_error_t je;
    json_t *schema = json_loads(schema_json, 0, &je);
    js_node root = g->nodes[g->root];
    int ok = 1;
    for (int k = 0; k < root.n && ok; k++) /* checked whole before anything changes */
        ok = xml_value_form(g, schema, &g->props[root.first + k]) != 0;
    for (int k = 0; k < root.n && ok; k++) {
        js_prop *p = &g->props[root.first + k];
        if (xml_value_form(g, schema, p) != 2) continue;
        int copy = unquoted_copy(g, p->node);
        if (copy < 0) ok = -1; /* out of memory: the graph is half changed */
        else p->node = copy;
    }
    json_decref(schema);
    return ok;
}

nc_status js_any_object(js_graph *g, nc_error *err) {
    memset(g, 0, sizeof *g);
    g->nodes = malloc(sizeof *g->nodes);
    if (!g->nodes) return nc_fail(err, NC_ERR_NOMEM, "JSON schema: out of memory");
    g->nodes[0] = (js_node){JS_OBJ_ANY, 0, 0, -1, 0, -1};
    g->n_nodes = g->cap_nodes = 1;
    g->root = 0;
    return NC_OK;
}

void js_free(js_graph *g) {
    for (int i = 0; i < g->n_props; i++)
        free(g->props[i].key);
    for (int i = 0; i < g->n_lits; i++)
        free(g->lits[i].text);
    free(g->nodes);
    free(g->props);
    free(g->lits);
    free(g->alts);
    memset(g, 0, sizeof *g);
}
