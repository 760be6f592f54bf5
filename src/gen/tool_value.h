/* How a value in Qwen3.5's XML call form (the raw text between the
 * template's <parameter=KEY> tags) is typed, by the "type" the tool's JSON
 * schema gives the parameter: the one rule of the call scanner
 * (tool_scan.c), and of the forced call's form (json_schema.c:
 * js_xml_call_form), which may have a value written as JSON only where the
 * scanner reads JSON back. */
#ifndef NC_GEN_TOOL_VALUE_H
#define NC_GEN_TOOL_VALUE_H

#include <jansson.h>
#include <stddef.h>

/* The "type" a tool's parameters schema gives its property key ("" when
 * none, or not a string). */
const char *gen_tool_value_type(const json_t *params, const char *key);

/* 1 when a value of schema type `type` ("" when none) is read as JSON:
 * integer, number, boolean, null, object, array; 0 when it stays text. */
int gen_tool_value_is_json(const char *type);

/* The value text v[0..n) as that rule reads it: JSON of the type when it
 * parses and fits (booleans and null also as Python's str writes them,
 * True, False, None, as Qwen3.5's first template did), else a string. New
 * reference; NULL when out of memory. */
json_t *gen_tool_value_read(const char *type, const char *v, size_t n);

#endif
