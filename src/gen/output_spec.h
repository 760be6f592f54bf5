/* What an OpenAI chat request asks of its output besides text: its tools
 * (shown to the model by the chat template, calls parsed back out of the
 * output), tool_choice, and response_format. Parsed here from the
 * request's JSON for both the server (serve_request.c) and the public API
 * (nc_chat_request), so both accept and refuse the same fields with the
 * same messages; out_constraint.h turns it into constrained sampling. */
#ifndef NC_GEN_OUTPUT_SPEC_H
#define NC_GEN_OUTPUT_SPEC_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

#define GEN_MAX_TOOLS 128

typedef enum {
    GEN_TOOLS_AUTO,     /* the model may call a tool or answer */
    GEN_TOOLS_NONE,     /* no tools in the prompt, no calls parsed */
    GEN_TOOLS_REQUIRED, /* the answer is one or more calls */
    GEN_TOOLS_NAMED     /* the answer is a call of tool_choice_name */
} gen_tool_choice;

typedef enum {
    GEN_FORMAT_TEXT,
    GEN_FORMAT_JSON_OBJECT, /* any JSON object */
    GEN_FORMAT_JSON_SCHEMA  /* a JSON value valid against schema */
} gen_format;

typedef struct gen_output_spec {
    char **tools;      /* each entry as the template's tojson text */
    char **tool_names; /* its function.name */
    size_t n_tools;
    gen_tool_choice tool_choice;
    char *tool_choice_name; /* GEN_TOOLS_NAMED */
    gen_format format;
    char *schema; /* response_format.json_schema.schema as JSON text */
} gen_output_spec;

/* Reads "tools", "tool_choice" and "response_format" of the request object
 * root (absent or null: none). allow_tools 0 refuses tools (a completions
 * request). On a bad field: NC_ERR_INVALID with err naming it ("'tools[0]'
 * must have ...") and param[param_cap] its JSON path; *spec is then
 * freed. */
nc_status gen_output_spec_parse(const json_t *root, int allow_tools, gen_output_spec *spec,
                                char *param, size_t param_cap, nc_error *err);

/* Whether output is parsed for tool calls (tools given, not "none"), and
 * whether it is constrained (a forced call or a JSON response_format). */
int gen_output_spec_uses_tools(const gen_output_spec *spec);
int gen_output_spec_is_constrained(const gen_output_spec *spec);

void gen_output_spec_free(gen_output_spec *spec);

#endif
