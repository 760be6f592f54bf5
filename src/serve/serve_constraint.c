/* Constrained output for one request (see serve_constraint.h): the schema
 * graph, the matcher's state, and the mask/accept hooks the generation
 * pipeline calls on the scheduler thread. A forced tool call is the schema
 * {"name": the tool(s), "arguments": its parameters} between the template's
 * tags (Qwen3.5: the literal start of the call, no graph); parameters the
 * matcher cannot enforce fall back to any object (the call still parses),
 * while a response_format schema it cannot enforce is refused. */
#include "serve/serve_constraint.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"

#define TOOL_PREFIX "<tool_call>\n"
#define TOOL_SUFFIX "\n</tool_call>"

struct serve_constraint {
    js_graph g;
    jm_grammar gr;
    char *prefix; /* owned: a Qwen3.5 call's start */
    jm_state st;
    const tm_vocab *v;
    double mask_s;
    long n_masks;
};

/* The tool's function.parameters from its tojson text, or NULL. */
static json_t *tool_parameters(const char *tool_json) {
    json_error_t je;
    json_t *t = json_loads(tool_json, 0, &je);
    json_t *p = json_object_get(json_object_get(t, "function"), "parameters");
    if (p) json_incref(p);
    json_decref(t);
    return p;
}

/* The schema of a forced call as JSON text (malloc'ed). */
static char *call_schema(const serve_request *r, int with_parameters) {
    json_t *names = json_array(), *args = NULL;
    for (size_t i = 0; i < r->n_tools; i++) {
        int is_it = r->tool_choice == SERVE_TOOLS_REQUIRED ||
                    !strcmp(r->tool_names[i], r->tool_choice_name);
        if (!is_it) continue;
        json_array_append_new(names, json_string(r->tool_names[i]));
        if (with_parameters && !args) args = tool_parameters(r->tools[i]);
    }
    /* Several candidates: the name is chosen first, so the arguments can
     * only be held to "an object" (the matcher has no "if name then"). */
    if (json_array_size(names) > 1) {
        json_decref(args);
        args = NULL;
    }
    if (!args) args = json_pack("{s:s}", "type", "object");
    json_t *schema =
        json_pack("{s:s,s:{s:{s:o},s:o},s:[s,s]}", "type", "object", "properties", "name", "enum",
                  names, "arguments", args, "required", "name", "arguments");
    char *text = schema ? json_dumps(schema, JSON_COMPACT) : NULL;
    json_decref(schema);
    return text;
}

/* The forced start of a Qwen3.5 call: the tool's name when only one can be
 * called (malloc'ed). */
static char *call_start35(const serve_request *r) {
    const char *only = r->tool_choice == SERVE_TOOLS_NAMED ? r->tool_choice_name
                       : r->n_tools == 1                   ? r->tool_names[0]
                                                           : NULL;
    size_t n = strlen(TOOL_PREFIX "<function=>\n") + (only ? strlen(only) : 0) + 1;
    char *p = malloc(n);
    if (p && only) snprintf(p, n, TOOL_PREFIX "<function=%s>\n", only);
    if (p && !only) snprintf(p, n, "%s", TOOL_PREFIX "<function=");
    return p;
}

nc_status serve_constraint_new(const serve_request *r, chat_family f, const tm_vocab *v,
                               serve_constraint **out, const char **param, nc_error *err) {
    *out = NULL;
    *param = NULL;
    int forced = r->n_tools > 0 &&
                 (r->tool_choice == SERVE_TOOLS_REQUIRED || r->tool_choice == SERVE_TOOLS_NAMED);
    if (!forced && r->format == SERVE_FORMAT_TEXT) return NC_OK;
    if (forced && r->format != SERVE_FORMAT_TEXT) {
        *param = "response_format";
        return nc_fail(err, NC_ERR_INVALID,
                       "'response_format' cannot be combined with a forced tool call");
    }
    serve_constraint *c = calloc(1, sizeof *c);
    if (!c) return nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
    c->v = v;
    c->gr.g = &c->g;
    c->gr.prefix = c->gr.suffix = "";
    nc_status st;
    if (forced && f == CHAT_QWEN35) {
        c->prefix = call_start35(r);
        st = c->prefix ? NC_OK : NC_ERR_NOMEM;
        c->gr.g = NULL;
        c->gr.prefix = c->prefix ? c->prefix : "";
    } else if (forced) {
        char *schema = call_schema(r, 1);
        st = schema ? js_compile(schema, "tools", &c->g, err) : NC_ERR_NOMEM;
        free(schema);
        if (st != NC_OK) { /* parameters it cannot enforce: any object as arguments */
            schema = call_schema(r, 0);
            st = schema ? js_compile(schema, "tools", &c->g, err) : NC_ERR_NOMEM;
            free(schema);
        }
        c->gr.prefix = TOOL_PREFIX;
        c->gr.suffix = TOOL_SUFFIX;
        *param = "tools";
    } else if (r->format == SERVE_FORMAT_JSON_OBJECT) {
        st = js_any_object(&c->g, err);
    } else {
        st = js_compile(r->schema, "response_format.json_schema.schema", &c->g, err);
        *param = "response_format.json_schema.schema";
    }
    if (st != NC_OK) {
        if (st == NC_ERR_NOMEM) nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
        free(c->prefix);
        free(c);
        return st;
    }
    c->gr.prefix_len = strlen(c->gr.prefix);
    c->gr.suffix_len = strlen(c->gr.suffix);
    jm_start(&c->gr, &c->st);
    *param = NULL;
    *out = c;
    return NC_OK;
}

void serve_constraint_free(serve_constraint *c) {
    if (!c) return;
    js_free(&c->g);
    free(c->prefix);
    free(c);
}

static void mask(void *user, float *logits) {
    serve_constraint *c = user;
    if (c->st.stage == JM_STAGE_FREE) return; /* past a forced start: the model's own choice */
    double t0 = nc_now_s();
    tm_mask(c->v, &c->gr, &c->st, logits);
    c->mask_s += nc_now_s() - t0;
    c->n_masks++;
}

static void accept(void *user, int32_t token) {
    serve_constraint *c = user;
    tm_accept(c->v, &c->gr, &c->st, token);
}

gen_constraint serve_constraint_hooks(serve_constraint *c) {
    return (gen_constraint){mask, accept, c};
}

void serve_constraint_cost(const serve_constraint *c, double *mask_s, long *n_masks) {
    *mask_s = c->mask_s;
    *n_masks = c->n_masks;
}
