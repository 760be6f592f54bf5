/* The MIL intermediate representation: program -> functions -> operations ->
 * variables, with types and literal values. The parser, the builder, the
 * printer, the checker and the interpreter all work on these structures.
 * Everything of one program lives in the program's arena and is released by
 * the one call mil_program_free().
 *
 * How a consumer walks a program
 * -------------------------------
 *   for (int f = 0; f < prog->n_functions; f++) {
 *       const mil_function *fn = prog->functions[f];
 *       // fn->name ("main"), fn->opset ("ios18"), mil_opset_version(fn->opset) == 18
 *       for (int i = 0; i < fn->n_inputs; i++)       // typed inputs, in declaration order
 *           use(fn->inputs[i]->name, fn->inputs[i]->type);
 *       for (int i = 0; i < fn->n_attrs; i++)        // function attributes, verbatim
 *           use(fn->attrs[i].name, fn->attrs[i].value); // e.g. FlexibleShapeInformation
 *       for (int k = 0; k < fn->n_ops; k++) {        // operations in order (topological)
 *           const mil_op *op = fn->ops[k];
 *           // op->type ("conv"), op->opset (per-op override like "ios17", or NULL),
 *           // op->def (op table row, NULL for an op type the table lacks)
 *           for (int a = 0; a < op->n_args; a++) {   // named arguments
 *               const mil_arg *arg = &op->args[a];  // arg->name ("x")
 *               // arg->is_tuple: written `values = (a, b)`; else exactly one item
 *               for (int j = 0; j < arg->n_items; j++) use(arg->items[j]); // mil_var *
 *           }
 *           for (int a = 0; a < op->n_attrs; a++)    // attributes: name, val, BackendSupport...
 *               use(op->attrs[a].name, op->attrs[a].value);
 *           for (int o = 0; o < op->n_outputs; o++)  // outputs with names and types
 *               use(op->outputs[o]->name, op->outputs[o]->type);
 *       }
 *       for (int i = 0; i < fn->n_outputs; i++)      // returned variables, in order
 *           use(fn->outputs[i]);
 *   }
 * Helpers: mil_op_arg(op, "x") finds an argument, mil_op_input(op, "x") its
 * single variable, mil_op_attr(op, "name") an attribute's value.
 *
 * Variables (mil_var) are the SSA values: function inputs, op outputs, and
 * inline literal arguments (`y = int32(0)`, which become anonymous variables
 * with name == NULL and cval set). A variable's compile-time value, when it
 * has one, is var->cval: the inline literal, or the `val` attribute of the
 * `const` op that defines it. So "argument must be constant" is
 * `var->cval != NULL` (constexpr_* ops are compile time too; see ops.h).
 *
 * Types (mil_type): kind TENSOR covers scalars, which are rank-0 tensors
 * (`int32`, `string` and the program(1.0) spelling `tensor<int32, []>` are the
 * same type). Use type->dtype, type->rank, type->dims[i]; an unknown dim `?`
 * is MIL_DIM_UNKNOWN (and a symbolic dim also has dim_syms[i] != NULL).
 *
 * Literal values (mil_value): an inline tensor holds value->n elements in
 * value->data, stored as mil_dtype_storage_bytes() says (fp16 as uint16 bit
 * patterns, sub-byte types one byte per element, strings in value->strs); a
 * BLOBFILE tensor holds blob_path ("@model_path/weights/weight.bin") and
 * blob_offset (the offset of the blob's metadata record). Its bytes, exactly
 * as stored in weight.bin (sub-byte types packed LSB first), come from
 * mil_value_bytes(), which resolves the path against prog->model_dir and maps
 * the blob file on first use. mil_value_to_f64 / mil_value_to_i64 read any
 * numeric element of either kind. */
#ifndef NC_MIL_IR_H
#define NC_MIL_IR_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "mil/dtype.h"

#define MIL_DIM_UNKNOWN (-1) /* a `?` (or symbolic) dimension */
#define MIL_LEN_UNKNOWN (-1) /* a `?` list length */

typedef enum mil_type_kind {
    MIL_TYPE_TENSOR, /* tensor<dtype, [dims]>; rank 0 = scalar (`fp16`, `string`) */
    MIL_TYPE_LIST,   /* list<elem, len> */
    MIL_TYPE_TUPLE,  /* tuple<t0, t1, ...> */
    MIL_TYPE_DICT,   /* dict<key, value> */
    MIL_TYPE_STATE,  /* state<tensor<...>> (iOS18 stateful programs) */
    MIL_TYPE_BUFFER  /* tensor_buffer<dtype, shape=[..], strides=[..], ...> (E5RT dialect) */
} mil_type_kind;

typedef struct mil_type mil_type;
struct mil_type {
    mil_type_kind kind;
    mil_dtype dtype;       /* TENSOR, BUFFER: element type */
    int rank;              /* TENSOR, BUFFER: number of dims (BUFFER: of its shape=) */
    const int64_t *dims;   /* rank entries; MIL_DIM_UNKNOWN for `?` */
    const char **dim_syms; /* NULL, or rank entries: the symbol of a symbolic dim, else NULL */
    /* LIST: elems[0] is the element type, list_len the length (MIL_LEN_UNKNOWN for `?`).
     * TUPLE: n_elems element types. DICT: elems[0] key, elems[1] value.
     * STATE: elems[0] is the wrapped tensor type. */
    int n_elems;
    const mil_type *const *elems;
    int64_t list_len;
    /* BUFFER: its `key=[ints]` parameters verbatim, in order (shape, strides,
     * interleave_factors); dims/rank mirror the one named "shape". */
    int n_params;
    const char *const *param_names;
    const int *param_lens;
    const int64_t *const *param_vals;
};

typedef enum mil_value_kind {
    MIL_VALUE_TENSOR, /* inline data: n elements (a scalar has n == 1) */
    MIL_VALUE_BLOB,   /* BLOBFILE(path = ..., offset = ...) */
    MIL_VALUE_LIST,   /* [a, b, ...]: n items */
    MIL_VALUE_TUPLE,  /* (a, b, ...): n items */
    MIL_VALUE_DICT    /* {{k, v}, ...}: n pairs; items holds 2n (k0, v0, k1, v1, ...) */
} mil_value_kind;

typedef struct mil_value mil_value;
struct mil_value {
    const mil_type *type; /* declared type; for nested items, the container's element type */
    mil_value_kind kind;
    size_t n;                /* TENSOR: element count; LIST/TUPLE: items; DICT: pairs */
    const void *data;        /* TENSOR, non-string: n * mil_dtype_storage_bytes(dtype) bytes */
    const char *const *strs; /* TENSOR, string dtype: n NUL-terminated strings */
    const mil_value *const *items; /* LIST/TUPLE: n; DICT: 2n */
    const char *blob_path;         /* BLOB: "@model_path/weights/weight.bin" */
    uint64_t blob_offset;          /* BLOB: offset of the metadata record in the file */
    const uint8_t *packed; /* internal: inline sub-byte data packed once by mil_value_bytes */
};

typedef struct mil_op mil_op;
typedef struct mil_var mil_var;

struct mil_var {
    const char *name;      /* SSA name; NULL for an anonymous inline literal */
    const mil_type *type;  /* declared (parser) or inferred (builder) type */
    const mil_value *cval; /* compile-time value (inline literal or const op's val), or NULL */
    mil_op *def;           /* defining op; NULL for function inputs and inline literals */
    int def_output;        /* index of this variable among def's outputs */
    int is_input;          /* a function input */
    int id;                /* index in its function's vars[] (dense, for per-variable tables) */
};

typedef struct mil_attr {
    const char *name;
    const mil_value *value;
} mil_attr;

typedef struct mil_arg {
    const char *name;
    int is_tuple; /* bound to a tuple `(a, b, ...)` (concat's values); else n_items == 1 */
    int n_items;
    mil_var *const *items;
} mil_arg;

struct mil_op_def; /* op table row, ops.h */

struct mil_op {
    const char *type;             /* "conv", "const", ... */
    const char *opset;            /* per-op opset override (`op<ios17>(...)`), or NULL */
    const struct mil_op_def *def; /* table row for this type and opset; NULL if unknown */
    int n_args;
    mil_arg *args; /* in source order (the printer sorts by name) */
    int n_attrs;
    mil_attr *attrs;
    int n_outputs; /* 0 for write_state */
    mil_var **outputs;
    int line;                /* 1-based source line (parser), 0 when built */
    struct mil_function *fn; /* owning function */
};

typedef struct mil_function {
    const char *name;  /* "main" */
    const char *opset; /* "ios18", "CoreML8", ... (see mil_opset_version) */
    int n_inputs;
    mil_var **inputs;
    int n_attrs;
    mil_attr *attrs; /* kept verbatim: FlexibleShapeInformation, Launch_ane_ms, ... */
    int n_ops, cap_ops;
    mil_op **ops;
    int n_outputs;
    mil_var **outputs; /* the `-> (a, b)` list */
    int n_vars, cap_vars;
    mil_var **vars; /* every variable of the function, vars[v->id] == v */
    int line;       /* source line of `func`, 0 when built */
    struct mil_program *prog;
    struct mil_var_index *index; /* name -> variable hash, internal */
} mil_function;

typedef struct mil_blob_cache mil_blob_cache; /* opened weight files, internal */

typedef struct mil_program {
    const char *version; /* "1.3", "1.0", "1" (the text inside program(...)) */
    int n_attrs;
    mil_attr *attrs; /* program attributes: buildInfo (a dict<string, string>) */
    int n_functions, cap_functions;
    mil_function **functions;
    const char *model_dir; /* what @model_path means (folder of model.mil), or NULL */
    const char *source;    /* file name used in messages, or NULL */
    nc_arena arena;        /* owns every structure above */
    mil_blob_cache *blobs; /* opened blob files, released with the program */
} mil_program;

/* --- program lifetime ---------------------------------------------------- */

/* An empty program with version "1.3" and no functions. */
nc_status mil_program_new(mil_program **out, nc_error *err);
/* Frees the program and everything in it (also maps of weight files). */
void mil_program_free(mil_program *prog);
/* Sets the folder that @model_path refers to (copied). */
nc_status mil_program_set_model_dir(mil_program *prog, const char *dir, nc_error *err);

/* --- lookups ------------------------------------------------------------- */

mil_function *mil_program_function(const mil_program *prog, const char *name); /* or NULL */
mil_var *mil_function_var(const mil_function *fn, const char *name);           /* or NULL */
const mil_value *mil_program_attr(const mil_program *prog, const char *name);  /* or NULL */
const mil_value *mil_function_attr(const mil_function *fn, const char *name);  /* or NULL */
const mil_arg *mil_op_arg(const mil_op *op, const char *name);                 /* or NULL */
/* The single variable bound to a non-tuple argument; NULL if absent or a tuple. */
mil_var *mil_op_input(const mil_op *op, const char *name);
const mil_value *mil_op_attr(const mil_op *op, const char *name); /* or NULL */
/* The op's `name` attribute as a C string, or NULL. */
const char *mil_op_name(const mil_op *op);

/* "ios18" -> 18, "ios15" -> 15, "CoreML5".."CoreML9" -> 15, 16, 17, 18, 26;
 * 0 when unrecognised. */
int mil_opset_version(const char *opset);
/* The opset an op is typed against: its override, else its function's. */
int mil_op_opset_version(const mil_op *op);

/* --- types --------------------------------------------------------------- */

/* Type constructors (not interned: compare with mil_type_equal); results live in
 * the program's arena; NULL on OOM. */
const mil_type *mil_type_tensor(mil_program *prog, mil_dtype dt, int rank, const int64_t *dims);
const mil_type *mil_type_scalar(mil_program *prog, mil_dtype dt);
const mil_type *mil_type_list(mil_program *prog, const mil_type *elem, int64_t len);
const mil_type *mil_type_tuple(mil_program *prog, int n, const mil_type *const *elems);
const mil_type *mil_type_dict(mil_program *prog, const mil_type *key, const mil_type *val);
const mil_type *mil_type_state(mil_program *prog, const mil_type *tensor);

int mil_type_is_tensor(const mil_type *t); /* TENSOR of any rank (scalars included) */
int mil_type_is_scalar(const mil_type *t); /* TENSOR of rank 0 */
/* Product of dims; -1 when a dim is unknown or for non-tensors; 1 for scalars. */
int64_t mil_type_numel(const mil_type *t);
/* Structural equality (dims, dtypes, element types; symbols compare by name). */
int mil_type_equal(const mil_type *a, const mil_type *b);
/* Like mil_type_equal, but an unknown dim in either matches any dim. */
int mil_type_compatible(const mil_type *a, const mil_type *b);
/* Writes the MIL spelling ("tensor<fp16, [1, 64]>") into buf; returns buf. */
char *mil_type_str(const mil_type *t, char *buf, size_t size);

/* --- literal values ------------------------------------------------------ */

/* Inline tensor of `type` whose data (n elements, storage as in dtype.h) is
 * copied into the arena. n must equal numel unless the type has unknown dims. */
const mil_value *mil_value_tensor(mil_program *prog, const mil_type *type, size_t n,
                                  const void *data);
const mil_value *mil_value_string(mil_program *prog, const char *s);       /* string("s") */
const mil_value *mil_value_i32(mil_program *prog, int32_t v);              /* int32(v) */
const mil_value *mil_value_bool(mil_program *prog, int v);                 /* bool(v) */
const mil_value *mil_value_f32(mil_program *prog, mil_dtype dt, double v); /* fp16/fp32/fp64 */
const mil_value *mil_value_blob(mil_program *prog, const mil_type *type, const char *path,
                                uint64_t offset);

/* Element i of a numeric/bool tensor value (inline or blob) as a double or an
 * integer. Fails on out-of-range i, strings, unreadable blobs. */
nc_status mil_value_to_f64(const mil_program *prog, const mil_value *v, size_t i, double *out,
                           nc_error *err);
nc_status mil_value_to_i64(const mil_program *prog, const mil_value *v, size_t i, int64_t *out,
                           nc_error *err);
/* The scalar string of a string value ("valid"), or NULL if v is not one. */
const char *mil_value_str(const mil_value *v);

/* The bytes of a tensor value as stored in weight.bin: for a BLOB value the
 * payload (validated against the declared type: dtype code, byte size), for
 * an inline value the data packed the same way (sub-byte types LSB first).
 * *out stays valid while the program lives. */
nc_status mil_value_bytes(const mil_program *prog, const mil_value *v, const uint8_t **out,
                          size_t *size_bytes, nc_error *err);

/* --- building blocks used by the parser and builder ---------------------- */

mil_function *mil_function_add(mil_program *prog, const char *name, const char *opset,
                               nc_error *err);
/* A new variable registered in fn (name may be NULL for literals). */
mil_var *mil_var_new(mil_function *fn, const char *name, const mil_type *type, nc_error *err);
/* An anonymous variable holding an inline literal. */
mil_var *mil_var_literal(mil_function *fn, const mil_value *v, nc_error *err);
/* Appends an empty op of `type` (def looked up from the op table). */
mil_op *mil_op_append(mil_function *fn, const char *type, const char *opset, nc_error *err);

#endif
