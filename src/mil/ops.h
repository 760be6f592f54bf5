/* The MIL op table: one row per (op type, opset version where its signature
 * changed). A row lists the op's arguments (name, required or optional, must
 * be compile-time constant, allowed dtypes, type variable shared with other
 * arguments) and its type/shape inference function. Parser, builder, checker
 * and interpreter all read this one table; adding an op is adding a row.
 *
 * Opsets: a function `main<ios17>` uses, for each op type, the newest row
 * whose `opset` is <= 17 (coremltools' rule). mil_op_lookup does that walk.
 *
 * Constexpr ops (flag MIL_OP_CONSTEXPR): evaluated at compile time. In
 * iOS16/17 files their parameters are written as attributes
 * (`constexpr_affine_dequantize()[axis = ..., quantized_data = ...]`), in
 * iOS18 as arguments; mil_op_operand() reads a parameter from either place. */
#ifndef NC_MIL_OPS_H
#define NC_MIL_OPS_H

#include "mil/ir.h"

#define MIL_MAX_OP_ARGS 12
#define MIL_MAX_OUTPUTS 256

enum mil_arg_flag {
    MIL_ARG_OPTIONAL = 1u << 0, /* may be omitted (the op has a default) */
    MIL_ARG_CONST = 1u << 1,    /* must be known at compile time (const op or literal) */
    MIL_ARG_TUPLE = 1u << 2,    /* bound to a tuple of variables: concat(values = (a, b)) */
    MIL_ARG_ANY_TYPE = 1u << 3  /* not a tensor (state<...>, tensor_buffer, list): no dtype check */
};

enum mil_op_flag {
    MIL_OP_CONSTEXPR = 1u << 0,    /* compile-time op; parameters may be attributes */
    MIL_OP_NO_OUTPUT = 1u << 1,    /* has no outputs (write_state) */
    MIL_OP_MULTI_OUTPUT = 1u << 2, /* several outputs (split) */
    MIL_OP_STATEFUL = 1u << 3      /* reads or writes state (read_state, write_state) */
};

typedef struct mil_arg_spec {
    const char *name; /* NULL ends the list */
    unsigned flags;   /* enum mil_arg_flag */
    char domain;      /* type variable ('T', 'U', ...): args with the same letter share one
                         dtype; 0 = no sharing */
    uint32_t dtypes;  /* allowed dtypes (MIL_DTBIT mask); 0 = any */
} mil_arg_spec;

typedef struct mil_infer_out {
    int n;                                  /* number of outputs */
    const mil_type *types[MIL_MAX_OUTPUTS]; /* allocated in the program's arena */
} mil_infer_out;

/* Infers output types from the op's bound arguments (their types and, where
 * needed, constant values). Messages name the op: "conv 'conv0': ...". */
typedef nc_status (*mil_infer_fn)(mil_program *prog, const mil_op *op, mil_infer_out *out,
                                  nc_error *err);

typedef struct mil_op_def {
    const char *type; /* "conv" */
    int opset;        /* first opset version with this signature: 15, 16, 17, 18 */
    unsigned flags;   /* enum mil_op_flag */
    mil_arg_spec args[MIL_MAX_OP_ARGS]; /* in canonical order; ends at name == NULL */
    mil_infer_fn infer;
} mil_op_def;

/* The newest row for `type` with row->opset <= opset; NULL if the op type is
 * not in the table or did not exist yet at that opset. opset 0 means newest. */
const mil_op_def *mil_op_lookup(const char *type, int opset);
/* The whole table (n rows), for listings and tests. */
const mil_op_def *mil_op_table(int *n);
/* The spec of argument `name`, or NULL when the op has no such argument. */
const mil_arg_spec *mil_op_def_arg(const mil_op_def *def, const char *name);

/* A parameter's variable when passed as an argument, or NULL. */
mil_var *mil_op_operand_var(const mil_op *op, const char *name);
/* A parameter's compile-time value, from an argument bound to a constant
 * variable or from an attribute of that name (constexpr attribute form);
 * NULL when absent or not constant. */
const mil_value *mil_op_operand(const mil_op *op, const char *name);
/* A parameter's type, from an argument or an attribute; NULL when absent. */
const mil_type *mil_op_operand_type(const mil_op *op, const char *name);

/* Checks the bound arguments against op->def: unknown names, missing required
 * ones, constness, tuple-ness, dtypes and type-variable agreement. Fails with
 * "<type> '<name>': ..." naming the op and the argument. */
nc_status mil_op_validate(const mil_op *op, nc_error *err);
/* Validates, then runs the row's inference function. NC_ERR_UNSUPPORTED when
 * the op type has no row. */
nc_status mil_op_infer(mil_program *prog, const mil_op *op, mil_infer_out *out, nc_error *err);

/* "conv 'conv0'" or "conv" (no name attribute): how messages name an op. */
const char *mil_op_label(const mil_op *op, char *buf, size_t size);

#endif
