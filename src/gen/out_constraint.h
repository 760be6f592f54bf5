/* A request's constrained output (the server's and the API's, from an
 * output_spec.h): response_format json_object or
 * json_schema, or a forced tool call (tool_choice "required" or a named
 * function): for Qwen3 the whole call,
 * "<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>" (Llama 3:
 * {"name": ..., "parameters": {...}}), the
 * arguments held to the parameters of the tool whose name was written; for
 * Qwen3.5, whose call body is XML rather than JSON, only its start,
 * "<tool_call>\n<function=NAME>\n" (with several candidate tools
 * "<tool_call>\n<function="), the rest left to the model.
 * Built when the request is prepared (a schema it cannot enforce is an
 * error then), used through gen_seq_constrain (gen_request.constraint),
 * freed with the request. */
#ifndef NC_GEN_OUT_CONSTRAINT_H
#define NC_GEN_OUT_CONSTRAINT_H

#include "gen/generate.h"
#include "gen/output_spec.h"
#include "gen/token_mask.h"
#include "text/chat.h"

typedef struct gen_out_constraint gen_out_constraint;

/* *out is NULL when the request asks for nothing constrained. On a schema
 * the matcher cannot enforce: NC_ERR_INVALID, err names it, *param the
 * request field. */
nc_status gen_out_constraint_new(const gen_output_spec *r, chat_family f, const tm_vocab *v,
                                 gen_out_constraint **out, const char **param, nc_error *err);
void gen_out_constraint_free(gen_out_constraint *c);

/* Back to the start, for another generation from the same request. */
void gen_out_constraint_restart(gen_out_constraint *c);

/* The gen_constraint hooks for it. */
gen_constraint gen_out_constraint_hooks(gen_out_constraint *c);

/* Time spent masking, for the per-token overhead figure (seconds, tokens). */
void gen_out_constraint_cost(const gen_out_constraint *c, double *mask_s, long *n_masks);

#endif
