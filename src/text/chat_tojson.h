/* Python's json.dumps(x, ensure_ascii=False) for a jansson value: the
 * `tojson` filter of transformers' chat templates (see chat_tojson.c). */
#ifndef NC_TEXT_CHAT_TOJSON_H
#define NC_TEXT_CHAT_TOJSON_H

#include <jansson.h>

#include "base/error.h"

/* *out is malloc'ed and NUL-terminated. */
nc_status chat_tojson(const json_t *v, char **out, nc_error *err);

/* json.dumps(x, ensure_ascii=False, indent=indent): the `tojson(indent=N)`
 * of a template (Llama 3's tool definitions): one item a line, nested
 * items indent more, "," between items and ": " after keys. */
nc_status chat_tojson_indent(const json_t *v, int indent, char **out, nc_error *err);

#endif
