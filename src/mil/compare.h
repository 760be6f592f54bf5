/* Structural equality of MIL programs: what "parse -> print -> parse gives
 * the same program" means. Argument and op-attribute order is ignored (the
 * printer sorts them); everything else (types, literal bits, BLOBFILE
 * references, names, order of ops, inputs and outputs) must match. */
#ifndef NC_MIL_COMPARE_H
#define NC_MIL_COMPARE_H

#include <stddef.h>

#include "mil/ir.h"

/* 1 when equal; else 0 and `why` (if non-NULL) says where they differ. */
int mil_program_equal(const mil_program *a, const mil_program *b, char *why, size_t why_size);
int mil_value_equal(const mil_value *a, const mil_value *b);

#endif
