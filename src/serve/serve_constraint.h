/* A request's constrained output: response_format json_object or
 * json_schema, or a forced tool call (tool_choice "required" or a named
 * function): for Qwen3 the whole call,
 * "<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>", the
 * arguments held to the parameters of the tool whose name was written; for
 * Qwen3.5, whose call body is XML rather than JSON, only its start,
 * "<tool_call>\n<function=NAME>\n" (with several candidate tools
 * "<tool_call>\n<function="), the rest left to the model.
 * Built when the request is prepared (a schema it cannot enforce is a 400
 * then), used by the scheduler through gen_seq_constrain, freed with the
 * job. */
#ifndef NC_SERVE_CONSTRAINT_H
#define NC_SERVE_CONSTRAINT_H

#include "gen/generate.h"
#include "gen/token_mask.h"
#include "serve/serve_request.h"
#include "text/chat.h"

typedef struct serve_constraint serve_constraint;

/* *out is NULL when the request asks for nothing constrained. On a schema
 * the matcher cannot enforce: NC_ERR_INVALID, err names it, *param the
 * request field. */
nc_status serve_constraint_new(const serve_request *r, chat_family f, const tm_vocab *v,
                               serve_constraint **out, const char **param, nc_error *err);
void serve_constraint_free(serve_constraint *c);

/* The gen_constraint hooks for it. */
gen_constraint serve_constraint_hooks(serve_constraint *c);

/* Time spent masking, for the per-token overhead figure (seconds, tokens). */
void serve_constraint_cost(const serve_constraint *c, double *mask_s, long *n_masks);

#endif
