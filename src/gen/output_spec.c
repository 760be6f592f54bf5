/* Parsing tools, tool_choice and response_format (see output_spec.h). The
 * messages are the server's ("'tools[0].function.name' must be 1-64
 * letters, ..."); param gets the field's JSON path for OpenAI's error
 * "param". */
#include "gen/output_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/chat_tojson.h"

typedef struct pctx {
    char *param;
    size_t cap;
    nc_error *err;
} pctx;

static nc_status bad(pctx *c, const char *param, const char *what) {
    snprintf(c->param, c->cap, "%s", param);
    return nc_fail(c->err, NC_ERR_INVALID, "'%s' %s", param, what);
}

static nc_status oom(pctx *c) {
    return nc_fail(c->err, NC_ERR_NOMEM, "request: out of memory");
}

/* The field, or NULL when absent or JSON null (OpenAI treats both alike). */
static json_t *field(const json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return (v && !json_is_null(v)) ? v : NULL;
}

/* OpenAI's rule for function names: 1-64 of [a-zA-Z0-9_-]. */
static int is_function_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

/* tools: [{"type": "function", "function": {"name", "description",
 * "parameters"}}], kept as the template's tojson text of each whole entry
 * (what HF's apply_chat_template renders); tool_choice: "none", "auto",
 * "required" or {"type": "function", "function": {"name"}}. */
static nc_status parse_tools(pctx *c, const json_t *root, int allow_tools, gen_output_spec *r) {
    json_t *tools = field(root, "tools"), *choice = field(root, "tool_choice");
    if (tools && !allow_tools) return bad(c, "tools", "is only for /v1/chat/completions");
    if (tools && !json_is_array(tools)) return bad(c, "tools", "must be an array");
    size_t n = json_array_size(tools);
    if (n > GEN_MAX_TOOLS) return bad(c, "tools", "has more than 128 entries");
    if (n) {
        r->tools = calloc(n, sizeof *r->tools);
        r->tool_names = calloc(n, sizeof *r->tool_names);
        if (!r->tools || !r->tool_names) return oom(c);
    }
    char param[64];
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(tools, i);
        json_t *type = json_is_object(t) ? field(t, "type") : NULL;
        json_t *f = json_is_object(t) ? field(t, "function") : NULL;
        json_t *name = json_is_object(f) ? field(f, "name") : NULL;
        json_t *params = json_is_object(f) ? field(f, "parameters") : NULL;
        snprintf(param, sizeof param, "tools[%zu]", i);
        if (!type || !json_is_string(type) || strcmp(json_string_value(type), "function") != 0)
            return bad(c, param, "must have \"type\": \"function\"");
        snprintf(param, sizeof param, "tools[%zu].function.name", i);
        if (!name || !json_is_string(name) || !is_function_name(json_string_value(name)))
            return bad(c, param, "must be 1-64 letters, digits, '_' or '-'");
        snprintf(param, sizeof param, "tools[%zu].function.parameters", i);
        if (params && !json_is_object(params)) return bad(c, param, "must be an object");
        r->n_tools = i + 1;
        r->tool_names[i] = strdup(json_string_value(name));
        if (!r->tool_names[i]) return oom(c);
        nc_error e;
        if (chat_tojson(t, &r->tools[i], &e) != NC_OK) return oom(c);
    }
    r->tool_choice = GEN_TOOLS_AUTO;
    if (!choice) return NC_OK;
    if (json_is_string(choice)) {
        const char *v = json_string_value(choice);
        if (!strcmp(v, "none"))
            r->tool_choice = GEN_TOOLS_NONE;
        else if (!strcmp(v, "required"))
            r->tool_choice = GEN_TOOLS_REQUIRED;
        else if (strcmp(v, "auto") != 0)
            return bad(c, "tool_choice", "must be none, auto, required or a function");
    } else {
        json_t *f = json_is_object(choice) ? field(choice, "function") : NULL;
        json_t *name = json_is_object(f) ? field(f, "name") : NULL;
        if (!name || !json_is_string(name))
            return bad(c, "tool_choice",
                       "must be none, auto, required or {\"type\": \"function\", "
                       "\"function\": {\"name\": ...}}");
        size_t k = 0;
        while (k < r->n_tools && strcmp(r->tool_names[k], json_string_value(name)) != 0)
            k++;
        if (k == r->n_tools) {
            char what[128];
            snprintf(what, sizeof what, "'%.80s' is not one of the tools", json_string_value(name));
            return bad(c, "tool_choice.function.name", what);
        }
        r->tool_choice = GEN_TOOLS_NAMED;
        r->tool_choice_name = strdup(json_string_value(name));
        if (!r->tool_choice_name) return oom(c);
    }
    if (r->tool_choice == GEN_TOOLS_REQUIRED && r->n_tools == 0)
        return bad(c, "tool_choice", "is 'required' but there are no tools");
    return NC_OK;
}

/* response_format: {"type": "text"}, {"type": "json_object"} or
 * {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}. */
static nc_status parse_format(pctx *c, const json_t *root, gen_output_spec *r) {
    json_t *rf = field(root, "response_format");
    if (!rf) return NC_OK;
    json_t *t = json_is_object(rf) ? field(rf, "type") : NULL;
    const char *type = t && json_is_string(t) ? json_string_value(t) : "";
    if (!strcmp(type, "text")) return NC_OK;
    if (!strcmp(type, "json_object")) {
        r->format = GEN_FORMAT_JSON_OBJECT;
        return NC_OK;
    }
    if (strcmp(type, "json_schema") != 0)
        return bad(c, "response_format.type", "must be text, json_object or json_schema");
    json_t *js = field(rf, "json_schema");
    json_t *schema = json_is_object(js) ? field(js, "schema") : NULL;
    if (!schema || !json_is_object(schema))
        return bad(c, "response_format.json_schema.schema", "must be an object");
    r->format = GEN_FORMAT_JSON_SCHEMA;
    r->schema = json_dumps(schema, JSON_COMPACT);
    return r->schema ? NC_OK : oom(c);
}

nc_status gen_output_spec_parse(const json_t *root, int allow_tools, gen_output_spec *spec,
                                char *param, size_t param_cap, nc_error *err) {
    memset(spec, 0, sizeof *spec);
    if (param_cap) param[0] = '\0';
    pctx c = {param, param_cap, err};
    nc_status st = parse_tools(&c, root, allow_tools, spec);
    if (st == NC_OK) st = parse_format(&c, root, spec);
    if (st != NC_OK) gen_output_spec_free(spec);
    return st;
}

int gen_output_spec_uses_tools(const gen_output_spec *spec) {
    return spec->n_tools > 0 && spec->tool_choice != GEN_TOOLS_NONE;
}

int gen_output_spec_is_constrained(const gen_output_spec *spec) {
    int forced = spec->n_tools > 0 &&
                 (spec->tool_choice == GEN_TOOLS_REQUIRED || spec->tool_choice == GEN_TOOLS_NAMED);
    return forced || spec->format != GEN_FORMAT_TEXT;
}

void gen_output_spec_free(gen_output_spec *spec) {
    for (size_t i = 0; i < spec->n_tools; i++) {
        free(spec->tools[i]);
        free(spec->tool_names[i]);
    }
    free(spec->tools);
    free(spec->tool_names);
    free(spec->tool_choice_name);
    free(spec->schema);
    memset(spec, 0, sizeof *spec);
}
