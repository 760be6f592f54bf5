/* Constrained output (src/gen/json_schema.c, json_match.c, token_mask.c):
 * the matcher accepts and refuses exact byte strings per schema; schemas
 * with keywords it cannot enforce are refused by name, integer ranges
 * matched exactly; and random walks
 * over a real vocabulary (models/demo/tokenizer.json), choosing among the
 * tokens the mask leaves, always end in text that jansson parses and that
 * satisfies the schema, checked by hand-written validators here. Without a
 * graph, a forced prefix and then anything (a Qwen3.5 tool call's start). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "../common/demo_vocab.h"
#include "gen/token_mask.h"

static int grammar_matches(const jm_grammar *gr, const char *text) {
    jm_state s;
    jm_start(gr, &s);
    int ok = 1;
    for (const char *p = text; *p && ok; p++)
        ok = jm_feed(gr, &s, (unsigned char)*p);
    return ok && jm_can_end(gr, &s);
}

static int graph_matches(const js_graph *g, const char *text) {
    jm_grammar gr = {g, "", "", 0, 0, 0};
    return grammar_matches(&gr, text);
}

static int matches(const char *schema, const char *text) {
    js_graph g;
    nc_error err;
    if (js_compile(schema, "schema", &g, &err) != NC_OK) return -1;
    int ok = graph_matches(&g, text);
    js_free(&g);
    return ok;
}

static void test_matcher_accepts_exactly_the_schema(void) {
    static const struct {
        const char *schema, *text;
        int want;
    } cases[] = {
        {"{\"type\":\"integer\"}", "-120", 1},
        {"{\"type\":\"integer\"}", "012", 0},
        {"{\"type\":\"integer\"}", "1.5", 0},
        {"{\"type\":\"number\"}", "-0.5e+10", 1},
        {"{\"type\":\"number\"}", "1.", 0},
        {"{\"type\":\"string\"}", "\"a\\u00e9\\n\xc3\xa9\"", 1},
        {"{\"type\":\"string\"}", "\"\xc3\"", 0},
        {"{\"type\":\"string\"}", "\"\\ud800\"", 0},
        {"{\"type\":\"string\"}", "\"tab\there\"", 0},
        {"{\"type\":\"string\",\"maxLength\":2}", "\"ab\"", 1},
        {"{\"type\":\"string\",\"maxLength\":2}", "\"abc\"", 0},
        {"{\"type\":\"string\",\"maxLength\":2}", "\"\xc3\xa9\\n\"", 1},
        {"{\"type\":\"string\",\"minLength\":1}", "\"\"", 0},
        {"{\"enum\":[1,10,\"x\"]}", "1", 1},
        {"{\"enum\":[1,10,\"x\"]}", "10", 1},
        {"{\"enum\":[1,10,\"x\"]}", "100", 0},
        {"{\"enum\":[1,10,\"x\"]}", "\"x\"", 1},
        {"{\"type\":[\"string\",\"null\"]}", "null", 1},
        {"{\"type\":\"boolean\"}", "true", 1},
        {"{\"type\":\"boolean\"}", "tru", 0},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":2}",
         "[]", 0},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":2}",
         "[1, 2]", 1},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":2}",
         "[1,2,3]", 0},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},"
         "\"required\":[\"b\"]}",
         "{\"a\": 1, \"b\": \"x\"}", 1},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},"
         "\"required\":[\"b\"]}",
         "{\"b\":\"x\"}", 1},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},"
         "\"required\":[\"b\"]}",
         "{\"a\":1}", 0},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},"
         "\"required\":[\"b\"]}",
         "{\"b\":\"x\",\"a\":1}", 0},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},"
         "\"required\":[\"b\"]}",
         "{\"b\":\"x\",\"c\":1}", 0},
        {"{\"properties\":{\"ab\":{\"type\":\"integer\"},\"a\":{\"type\":\"integer\"}}}",
         "{\"a\":1}", 1},
        {"{}", "{\"k\": [1, {\"x\": null}, \"s\", -2.5e3, true]}", 1},
        {"{}", "{\"k\":  1}", 0},
        {"{\"$defs\":{\"n\":{\"properties\":{\"v\":{\"type\":\"integer\"},\"k\":{\"type\":"
         "\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}}},\"required\":[\"v\"]}},\"$ref\":\"#/$defs/"
         "n\"}",
         "{\"v\":1,\"k\":[{\"v\":2},{\"v\":3,\"k\":[]}]}", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got = matches(cases[i].schema, cases[i].text);
        CHECKF(got == cases[i].want, "case %zu: '%s' -> %d, want %d", i, cases[i].text, got,
               cases[i].want);
    }
}

static void test_unenforceable_schemas_are_refused(void) {
    static const char *const bad[] = {
        "{\"type\":\"string\",\"pattern\":\"^a\"}",
        "{\"type\":\"integer\",\"minimum\":3}",
        ("{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"a\":{}}},{\"type\":\"object\","
         "\"properties\":{\"b\":{}}}]}"),
        "{\"$ref\":\"#/$defs/missing\"}",
        "{\"type\":\"frog\"}",
        "[1]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        js_graph g;
        nc_error err = {0};
        CHECKF(js_compile(bad[i], "schema", &g, &err) == NC_ERR_INVALID && err.msg[0],
               "schema %zu was accepted", i);
    }
}

/* Schemas the compiler used to take and then generate invalid output for
 * (a required key outside properties: {}; an enum of the wrong type: "a";
 * a $ref cycle: nothing at all), and the length bounds at their edges. */
static void test_schema_edges_generate_valid_output(void) {
    static const struct {
        const char *schema, *text;
        int want;
    } cases[] = {
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"b\"]}",
         "{}", 0},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"b\"]}",
         "{\"a\":\"x\"}", 0},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"b\"]}",
         "{\"b\":[1]}", 1},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"b\"]}",
         "{\"a\":\"x\",\"b\":null}", 1},
        {"{\"type\":\"object\",\"required\":[\"a\",\"a\"]}", "{}", 0},
        {"{\"type\":\"object\",\"required\":[\"a\",\"a\"]}", "{\"a\":1}", 1},
        {"{\"required\":[\"a\"]}", "{}", 0},
        {"{\"required\":[\"a\"]}", "{\"a\":true}", 1},
        {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":2}", "\"ab\"", 1},
        {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":2}", "\"a\"", 0},
        {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":2}", "\"abc\"", 0},
        {"{\"type\":\"string\",\"maxLength\":0}", "\"\"", 1},
        {"{\"type\":\"string\",\"maxLength\":0}", "\"a\"", 0},
        {"{\"type\":[\"integer\",\"null\"],\"enum\":[1,null]}", "null", 1},
        {"{\"type\":\"integer\",\"enum\":[1,2.0]}", "2.0", 1},
        {"{\"type\":\"string\",\"const\":\"k\"}", "\"k\"", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got = matches(cases[i].schema, cases[i].text);
        CHECKF(got == cases[i].want, "case %zu: '%s' -> %d, want %d", i, cases[i].text, got,
               cases[i].want);
    }
    static const struct {
        const char *schema, *names; /* the message must name this */
    } bad[] = {
        {"{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"],"
         "\"additionalProperties\":false}",
         "'required' names 'b'"},
        {"{\"type\":\"object\",\"required\":\"a\"}", "'required'"},
        {"{\"type\":\"object\",\"required\":[1]}", "'required[0]'"},
        {"{\"type\":\"integer\",\"enum\":[\"a\"]}", "'enum[0]' value \"a\""},
        {"{\"type\":\"integer\",\"enum\":[1,1.5]}", "'enum[1]'"},
        {"{\"type\":[\"string\",\"null\"],\"enum\":[\"a\",0]}", "'enum[1]'"},
        {"{\"type\":\"string\",\"const\":3}", "'const' value 3"},
        {"{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}}}", "$ref cycle"},
        {"{\"$ref\":\"#\"}", "$ref cycle"},
        {"{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":"
         "\"#/$defs/a\"}}}",
         "$ref cycle"},
        {"{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"},{\"type\":"
         "\"null\"}]}}}",
         "$ref cycle"},        {"{\"type\":\"integer\",\"minimum\":0}", "'minimum'"},
        {"{\"type\":\"integer\",\"maximum\":9}", "'maximum'"},
        {"{\"type\":\"integer\",\"minimum\":0,\"maximum\":1024}", "at most 1024"},
        {"{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", "no integer"},
        {"{\"type\":\"integer\",\"minimum\":\"1\",\"maximum\":4}", "must be a number"},
        {"{\"type\":\"number\",\"minimum\":0,\"maximum\":1}", "'minimum'"},
        {"{\"type\":\"integer\",\"minimum\":0,\"maximum\":9,\"multipleOf\":2}", "'multipleOf'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        js_graph g;
        nc_error err = {0};
        nc_status st = js_compile(bad[i].schema, "schema", &g, &err);
        if (st == NC_OK) js_free(&g);
        CHECKF(st == NC_ERR_INVALID && strstr(err.msg, bad[i].names),
               "schema %zu: status %d, message '%s' (want it to name %s)", i, (int)st, err.msg,
               bad[i].names);
    }
}

/* A number at the 32-byte bound: a byte that leaves it unfinished ('E',
 * '.', a sign) is taken only while one more byte fits, so the number can
 * always be finished (fuzz_json_schema found 0.000...0E as a dead end:
 * the 'E' was the 32nd byte). */
static void test_number_at_its_bound_can_always_end(void) {
    js_graph g;
    nc_error err;
    CHECK_OK(js_compile("{\"type\":\"number\"}", "schema", &g, &err), &err);
    jm_grammar gr = {&g, "", "", 0, 0, 0};
    for (int zeros = 27; zeros <= 29; zeros++) {
        jm_state s;
        jm_start(&gr, &s);
        int ok = jm_feed(&gr, &s, '0') && jm_feed(&gr, &s, '.');
        for (int i = 0; i < zeros && ok; i++)
            ok = jm_feed(&gr, &s, '0');
        jm_state e;
        jm_copy(&e, &s);
        int took_e = ok && jm_feed(&gr, &e, 'E');
        /* 2 + zeros bytes so far; 'E' would be byte 3 + zeros */
        if (3 + zeros < 32) {
            jm_state d;
            jm_copy(&d, &e);
            CHECKF(took_e && jm_feed(&gr, &d, '1') && jm_can_end(&gr, &d),
                   "%d zeros: E1 not taken", zeros);
        } else {
            CHECKF(ok && !took_e && jm_can_end(&gr, &s), "%d zeros: 'E' taken as the last byte",
                   zeros);
        }
    }
    js_free(&g);
}

/* enum: 1024 values are taken, 1025 refused with a message saying so
 * (it used to read "enum must be a non-empty array"). */
static void test_enum_size_limit_is_named(void) {
    for (int n = 1024; n <= 1025; n++) {
        char *schema = malloc((size_t)n * 8 + 32);
        CHECK(schema);
        size_t len = (size_t)sprintf(schema, "{\"enum\":[");
        for (int i = 0; i < n; i++)
            len += (size_t)sprintf(schema + len, "%s%d", i ? "," : "", i);
        strcpy(schema + len, "]}");
        js_graph g;
        nc_error err = {0};
        nc_status st = js_compile(schema, "schema", &g, &err);
        free(schema);
        if (st == NC_OK) js_free(&g);
        if (n == 1024)
            CHECKF(st == NC_OK, "1024 values: %s", err.msg);
        else
            CHECKF(st == NC_ERR_INVALID && strstr(err.msg, "1025 values") &&
                       strstr(err.msg, "at most 1024"),
                   "1025 values: '%s'", err.msg);
    }
}

/* An integer between minimum and maximum (inclusive or exclusive, bounds
 * rounded inward) is matched exactly: every value in range, nothing else;
 * open, empty and over-wide ranges are refused naming the keyword. */
static void test_integer_ranges_are_enforced(void) {
    static const char *r1_99 = "{\"type\":\"integer\",\"minimum\":1,\"maximum\":99}";
    static const char *ex = "{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":3}";
    static const char *neg = "{\"type\":\"integer\",\"minimum\":-2.5,\"maximum\":2.5}";
    static const struct {
        const char *const *schema, *text;
        int want;
    } cases[] = {
        {&r1_99, "1", 1},  {&r1_99, "9", 1},   {&r1_99, "10", 1},  {&r1_99, "99", 1},
        {&r1_99, "0", 0},  {&r1_99, "100", 0}, {&r1_99, "-1", 0},  {&r1_99, "01", 0},
        {&r1_99, "1.0", 0}, {&ex, "1", 1},     {&ex, "2", 1},      {&ex, "0", 0},
        {&ex, "3", 0},     {&neg, "-2", 1},    {&neg, "0", 1},     {&neg, "2", 1},
        {&neg, "-3", 0},   {&neg, "3", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got = matches(*cases[i].schema, cases[i].text);
        CHECKF(got == cases[i].want, "case %zu: '%s' -> %d, want %d", i, cases[i].text, got,
               cases[i].want);
    }
    CHECK(matches("{\"type\":\"integer\",\"minimum\":0,\"maximum\":1023}", "1023") == 1);
}

/* A tool's parameters with keywords the matcher cannot enforce are still
 * held to their structure: required keys, types and enums (finding 3 of
 * the hostile review: such a tool used to get any object, so `{}`). */
static void test_relaxed_schema_keeps_required_and_types(void) {
    const char *schema = "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\","
                         "\"pattern\":\"^a\"},\"n\":{\"type\":\"integer\",\"minimum\":0},"
                         "\"m\":{\"enum\":[\"x\",\"y\"]}},\"required\":[\"q\",\"m\"],"
                         "\"additionalProperties\":false}";
    static const struct {
        const char *text;
        int want;
    } cases[] = {
        {"{}", 0},
        {"{\"q\":\"b\"}", 0},
        {"{\"q\":\"b\",\"m\":\"z\"}", 0},
        {"{\"q\":1,\"m\":\"x\"}", 0},
        {"{\"q\":\"b\",\"m\":\"x\"}", 1},
        {"{\"q\":\"a\",\"n\":-5,\"m\":\"y\"}", 1},
        {"{\"q\":\"a\",\"n\":1.5,\"m\":\"y\"}", 0},
    };
    js_graph g;
    nc_error err = {0};
    CHECK(js_compile(schema, "tools", &g, &err) == NC_ERR_INVALID && strstr(err.msg, "'pattern'"));
    CHECK_OK(js_compile_relaxed(schema, "tools", &g, &err), &err);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int ok = graph_matches(&g, cases[i].text);
        CHECKF(ok == cases[i].want, "'%s' -> %d, want %d", cases[i].text, ok, cases[i].want);
    }
    js_free(&g);
}

/* Qwen3.5's XML call form of a tool's parameters (xml_root): each property
 * as <parameter=KEY>, raw strings with their length bounds, string enums
 * unquoted, other values as JSON, required ones in schema order, then
 * </function>; "</parameter>" can never sit inside a value. */
static void test_xml_call_form_accepts_exactly_the_schema(void) {
    const char *schema = "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\","
                         "\"maxLength\":5},\"m\":{\"enum\":[\"a\",\"ab\"]},\"n\":{\"type\":"
                         "\"integer\"}},\"required\":[\"q\",\"m\"]}";
#define P(k, v) "<parameter=" k ">\n" v "\n</parameter>\n"
    static const struct {
        const char *text;
        int want;
    } cases[] = {
        {P("q", "hi") P("m", "ab") "</function>", 1},
        {P("q", "hi") P("m", "a") P("n", "-12") "</function>", 1},
        {P("q", "a\nb<c") P("m", "a") "</function>", 1},
        {P("q", "") P("m", "a") "</function>", 1},
        {P("q", "h\xc3\xa9llo") P("m", "a") "</function>", 1},
        {P("q", "hi") "</function>", 0},
        {P("m", "a") P("q", "hi") "</function>", 0},
        {P("q", "hello!") P("m", "a") "</function>", 0},
        {P("q", "a</parameter>") P("m", "a") "</function>", 0},
        {P("q", "hi") P("m", "abc") "</function>", 0},
        {P("q", "hi") P("m", "\"a\"") "</function>", 0},
        {P("q", "hi") P("m", "a") P("n", "1.5") "</function>", 0},
        {P("\"q\"", "hi") P("m", "a") "</function>", 0},
        {"{\"q\":\"hi\",\"m\":\"a\"}", 0},
    };
#undef P
    js_graph g;
    nc_error err = {0};
    CHECK_OK(js_compile(schema, "tools", &g, &err), &err);
    CHECK(js_xml_call_form(&g, schema) == 1);
    jm_grammar gr = {&g, "", "", 0, 0, 1};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int ok = grammar_matches(&gr, cases[i].text);
        CHECKF(ok == cases[i].want, "case %zu: '%s' -> %d, want %d", i, cases[i].text, ok,
               cases[i].want);
    }
    js_free(&g);
    /* forms it cannot hold exactly: an enum of numbers with no type (read
       back as a string), a union, a key that is no plain name */
    static const char *const no_xml[] = {
        "{\"type\":\"object\",\"properties\":{\"a\":{\"enum\":[1,2]}}}",
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":[\"string\",\"null\"]}}}",
        "{\"type\":\"object\",\"properties\":{\"a>b\":{\"type\":\"string\"}}}",
        "{\"type\":\"array\"}",
    };
    for (size_t i = 0; i < sizeof no_xml / sizeof *no_xml; i++) {
        CHECK_OK(js_compile(no_xml[i], "tools", &g, &err), &err);
        CHECKF(js_xml_call_form(&g, no_xml[i]) == 0, "%s taken for the XML form", no_xml[i]);
        js_free(&g);
    }
}

/* ---- random walks over a real vocabulary --------------------------------- */

static uint64_t rng = 0x243f6a8885a308d3ull;

typedef int (*validator)(const json_t *v);

static int is_int(const json_t *v) {
    return json_is_integer(v);
}

static int check_person(const json_t *v) {
    if (!json_is_object(v)) return 0;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (!strcmp(k, "name") && !json_is_string(x)) return 0;
        if (!strcmp(k, "age") && !is_int(x)) return 0;
        if (!strcmp(k, "tags")) {
            if (!json_is_array(x) || json_array_size(x) > 3) return 0;
            for (size_t i = 0; i < json_array_size(x); i++)
                if (!json_is_string(json_array_get(x, i))) return 0;
        }
        if (!strcmp(k, "color")) {
            const char *c = json_string_value(x);
            if (!c || (strcmp(c, "red") && strcmp(c, "green") && strcmp(c, "blue"))) return 0;
        }
        if (!strcmp(k, "score") && !json_is_number(x) && !json_is_null(x)) return 0;
        if (!strcmp(k, "ok") && !json_is_boolean(x)) return 0;
        if (strcmp(k, "name") && strcmp(k, "age") && strcmp(k, "tags") && strcmp(k, "color") &&
            strcmp(k, "score") && strcmp(k, "ok"))
            return 0;
    }
    return json_object_get(v, "name") && json_object_get(v, "age") && json_object_get(v, "color");
}

static int check_object(const json_t *v) {
    return json_is_object(v);
}

static int check_node(const json_t *v) {
    if (!json_is_object(v) || !is_int(json_object_get(v, "v"))) return 0;
    json_t *kids = json_object_get(v, "k");
    if (json_object_size(v) != (kids ? 2u : 1u)) return 0;
    if (!kids) return 1;
    if (!json_is_array(kids) || json_array_size(kids) > 2) return 0;
    for (size_t i = 0; i < json_array_size(kids); i++)
        if (!check_node(json_array_get(kids, i))) return 0;
    return 1;
}

static const char *person_schema =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":"
    "\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":3},"
    "\"color\":{\"enum\":[\"red\",\"green\",\"blue\"]},\"score\":{\"type\":[\"number\",\"null\"]},"
    "\"ok\":{\"type\":\"boolean\"}},\"required\":[\"name\",\"age\",\"color\"]}";
static const char *node_schema =
    "{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"k\":{"
    "\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"},\"maxItems\":2}},\"required\":[\"v\"]}},"
    "\"$ref\":\"#/$defs/n\"}";

/* One walk: random logits, a bonus for closing bytes so walks end, the
 * mask, the best allowed token. Returns the generated bytes (malloc'ed) or
 * NULL when the walk got stuck or ran too long. */
static char *walk(const tm_vocab *v, const jm_grammar *gr, const tok_tokenizer *t, int n_vocab,
                  int32_t eog) {
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    char *out = calloc(1, 65536);
    size_t n = 0;
    jm_state s;
    jm_start(gr, &s);
    for (int step = 0; step < 3000 && logits && out; step++) {
        nc_test_walk_logits(t, n_vocab, eog, &rng, logits);
        if (tm_mask(v, gr, &s, logits) == 0) break;
        int best = nc_test_walk_best(logits, n_vocab);
        if (!tm_accept(v, gr, &s, best)) break;
        if (best == eog) {
            free(logits);
            return out;
        }
        if (nc_test_walk_append(t, best, out, &n, 65536) != 0) break;
    }
    free(logits);
    free(out);
    return NULL;
}

static void test_random_walks_always_validate(void) {
    tok_tokenizer *t;
    tm_vocab *v;
    int32_t eog;
    nc_error err;
    CHECK_OK(nc_test_demo_vocab(&t, &v, &eog, &err), &err);
    int n_vocab = tok_vocab_size(t);
    static const struct {
        const char *schema; /* NULL: json_object */
        validator check;
        const char *prefix, *suffix;
    } cases[] = {
        {NULL, check_object, "", ""},
        {NULL, check_person, "", ""}, /* replaced below by the person schema */
        {NULL, check_node, "", ""},
        {NULL, check_person, "<tool_call>\n{\"name\": \"f\", \"arguments\": ", "}\n</tool_call>"},
    };
    const char *schemas[] = {NULL, person_schema, node_schema, person_schema};
    int ok = 1, n_walks = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases && ok; c++) {
        js_graph g;
        if (schemas[c])
            CHECK_OK(js_compile(schemas[c], "schema", &g, &err), &err);
        else
            CHECK_OK(js_any_object(&g, &err), &err);
        jm_grammar gr = {&g, cases[c].prefix, cases[c].suffix, strlen(cases[c].prefix),
                         strlen(cases[c].suffix), 0};
        for (int w = 0; w < 8 && ok; w++) {
            char *out = walk(v, &gr, t, n_vocab, eog);
            if (!out) {
                printf("  case %zu walk %d: stuck or too long\n", c, w);
                ok = 0;
                break;
            }
            size_t pl = strlen(cases[c].prefix), sl = strlen(cases[c].suffix), n = strlen(out);
            int framed = n >= pl + sl && !memcmp(out, cases[c].prefix, pl) &&
                         !memcmp(out + n - sl, cases[c].suffix, sl);
            json_error_t je;
            json_t *j = framed ? json_loadb(out + pl, n - pl - sl, 0, &je) : NULL;
            if (!j || !cases[c].check(j)) {
                printf("  case %zu walk %d: invalid output: %.300s\n", c, w, out);
                ok = 0;
            }
            json_decref(j);
            free(out);
            n_walks++;
        }
        js_free(&g);
    }
    tm_vocab_free(v);
    tok_free(t);
    CHECK(ok);
    CHECK(n_walks == 32);
}

/* Fed text through a graph-less grammar: 1 when it is accepted and may end. */
static int free_matches(const char *prefix, const char *text) {
    jm_grammar gr = {NULL, prefix, "", strlen(prefix), 0, 0};
    jm_state s;
    jm_start(&gr, &s);
    int ok = 1;
    for (const char *p = text; *p && ok; p++)
        ok = jm_feed(&gr, &s, (unsigned char)*p);
    return ok && jm_can_end(&gr, &s);
}

static void test_prefix_then_anything(void) {
    const char *pre = "<tool_call>\n<function=f>\n";
    CHECK(free_matches(pre, "<tool_call>\n<function=f>\n"));
    CHECK(free_matches(pre, "<tool_call>\n<function=f>\n{not json] \x01\xff"));
    CHECK(!free_matches(pre, "<tool_call>\n<function=g>\n"));
    CHECK(!free_matches(pre, "<tool_call>\n<func")); /* cannot end inside the prefix */
    CHECK(!free_matches(pre, "Sure! <tool_call>"));
    CHECK(free_matches("", "anything at all"));
    CHECK(free_matches("", ""));
}

int main(void) {
    RUN(test_matcher_accepts_exactly_the_schema);
    RUN(test_unenforceable_schemas_are_refused);
    RUN(test_schema_edges_generate_valid_output);
    RUN(test_enum_size_limit_is_named);
    RUN(test_integer_ranges_are_enforced);
    RUN(test_relaxed_schema_keeps_required_and_types);
    RUN(test_xml_call_form_accepts_exactly_the_schema);
    RUN(test_number_at_its_bound_can_always_end);
    RUN(test_random_walks_always_validate);
    RUN(test_prefix_then_anything);
    return nc_test_exit_code();
}
