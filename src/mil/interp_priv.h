/* Internals shared by the interpreter's core (interp.c) and its op
 * implementations (interp_ops*.c): the per-variable value slots, the per-op
 * plan and the argument readers. Not for use outside src/mil/interp*. */
#ifndef NC_MIL_INTERP_PRIV_H
#define NC_MIL_INTERP_PRIV_H

#include "mil/interp.h"
#include "mil/interp_kernels.h"

/* The run-time value of one variable. Storage is 4 bytes an element: float
 * for float dtypes, int32 for integer and bool dtypes (is_int). Buffers grow
 * and are kept across runs. */
typedef struct mil_slot {
    mil_kshape shape;
    mil_dtype dtype;
    int is_int;
    int is_const;  /* computed when preparing; never rewritten by a run */
    int has_value; /* bound or computed at least once */
    void *data;
    size_t cap;        /* elements allocated */
    const char *str;   /* string scalars */
} mil_slot;

struct op_plan;
typedef nc_status (*mil_exec_fn)(mil_interp *it, struct op_plan *p, nc_error *err);

typedef struct op_plan {
    const mil_op *op;
    mil_exec_fn fn;
    int row;          /* the op's row in its family's table, -1 until first run */
    void *scratch[3]; /* per-op temporaries, grown and kept across runs */
    size_t scratch_cap[3];
} op_plan;

struct mil_interp {
    const mil_program *prog;
    const mil_function *fn;
    mil_interp_mode mode;
    size_t max_elements; /* 0: no limit */
    nc_pool *pool;       /* caller's thread pool for the matrix kernels, or NULL */
    FILE *trace;         /* per-op statistics after each op of a run, or NULL */
    int n_slots;
    mil_slot *slots;
    int n_plans;
    op_plan *plans; /* ops left to run (not folded) */
};

/* The op implementation for a type, or NULL: one table per family of ops
 * (interp_ops_math.c, interp_ops_layout.c, interp_ops_const.c), searched in
 * turn by mil_interp_lookup. */
mil_exec_fn mil_interp_lookup(const char *type);
mil_exec_fn mil_interp_lookup_math(const char *type);
mil_exec_fn mil_interp_lookup_layout(const char *type);
mil_exec_fn mil_interp_lookup_const(const char *type);

/* ---- helpers for op implementations (interp.c) ---- */

/* "conv 'op' (model.mil:12)": how messages name an op. */
const char *mil_interp_op_label(const mil_op *op, char *buf, size_t size);
/* nc_fail with the op label prefixed. */
nc_status mil_interp_fail(nc_error *err, nc_status code, const mil_op *op, const char *fmt, ...)
    NC_PRINTF(4, 5);

mil_slot *mil_interp_slot(mil_interp *it, const mil_var *v);
/* The slot of a single-variable argument, or NULL when absent. */
mil_slot *mil_interp_arg(mil_interp *it, const mil_op *op, const char *name);
/* Like mil_interp_arg but fails naming the op when absent or unset. */
nc_status mil_interp_need(mil_interp *it, const mil_op *op, const char *name, mil_slot **out,
                          nc_error *err);

/* Scalar/vector parameters read from argument slots; `dflt` applies when the
 * argument is absent. */
nc_status mil_interp_int(mil_interp *it, const mil_op *op, const char *name, int64_t dflt,
                         int64_t *out, nc_error *err);
nc_status mil_interp_float(mil_interp *it, const mil_op *op, const char *name, float dflt,
                           float *out, nc_error *err);
/* Up to max values; *n = -1 when absent. */
nc_status mil_interp_ints(mil_interp *it, const mil_op *op, const char *name, int64_t *vals,
                          int max, int *n, nc_error *err);
/* A string parameter (argument or attribute), or dflt. */
const char *mil_interp_str(mil_interp *it, const mil_op *op, const char *name, const char *dflt);

/* Sets output k's shape and makes room; storage kind follows its dtype. */
nc_status mil_interp_out(mil_interp *it, const mil_op *op, int k, const mil_kshape *shape,
                         mil_slot **out, nc_error *err);
/* Grows plan scratch buffer i to n 4-byte elements. */
nc_status mil_interp_scratch(op_plan *p, int i, size_t n, void **out, nc_error *err);

/* Fills a slot from a compile-time value (inline, BLOBFILE) of type t. */
nc_status mil_interp_load_value(mil_interp *it, const mil_value *v, mil_slot *s, nc_error *err);

/* Normalises an axis into [0, rank); -1 when out of range. */
static inline int mil_interp_axis(int64_t axis, int rank) {
    if (axis < 0) axis += rank;
    return (axis < 0 || axis >= rank) ? -1 : (int)axis;
}

#endif
