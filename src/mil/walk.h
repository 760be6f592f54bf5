/* Visiting every literal value of a program (op attributes, inline
 * arguments, function and program attributes), recursively into lists,
 * tuples and dicts. Used to count weights, list and rewrite BLOBFILE paths. */
#ifndef NC_MIL_WALK_H
#define NC_MIL_WALK_H

#include "mil/ir.h"

/* Called for each value; op is NULL outside ops. Values are the program's
 * own (mutable through the cast the rewriter does on purpose). */
typedef void (*mil_value_visitor)(void *ctx, const mil_value *v, const mil_op *op);

void mil_program_visit_values(const mil_program *prog, mil_value_visitor fn, void *ctx);

#endif
