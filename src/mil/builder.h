/* The MIL builder: writes programs op by op, as model lowering does.
 *
 *   mil_builder *b;
 *   mil_builder_new(&b, "out/model", &err);          // weights -> out/model/weights/weight.bin
 *   mil_build_function(b, "main", "ios18");
 *   mil_var *x = mil_build_input(b, "x", mil_type_tensor(mil_builder_program(b), MIL_DT_FP16, 4,
 * dims)); mil_var *y = mil_build_conv1x1(b, "proj", x, 64, 128, weights, NULL); y =
 * mil_build_unary(b, "relu", "act", y); mil_build_done(b, &y, 1); mil_builder_finish(b, &prog,
 * &err);              // closes weight.bin; prog is yours
 *
 * Every call infers its outputs' types at once (ops.h). A wrong argument
 * name, dtype or shape fails AT THAT CALL: it returns NULL (or an error
 * status) and mil_builder_error(b) holds a message naming the op, e.g.
 * "matmul 'qk': inner dimensions differ: x gives 64, y gives 32". The first
 * error is sticky: later calls return NULL until the builder is freed.
 *
 * Constants: tensors of more than MIL_BUILD_INLINE_MAX elements go to the
 * weight file as BLOBFILE(path = "@model_path/weights/weight.bin", offset =
 * N); smaller ones, and all of them when the builder has no model folder,
 * stay inline. Several functions share a weight by passing the same
 * BLOBFILE value (var->cval of the first const) to mil_build_const again: it
 * is referenced, not written twice.
 *
 * Names: `name` becomes both the SSA variable and the op's name attribute;
 * NULL picks "<op type>_<n>". Parameters of helper ops become const ops
 * named "<name>_<parameter>" like coremlc's (conv0_strides_0 style). */
#ifndef NC_MIL_BUILDER_H
#define NC_MIL_BUILDER_H

#include "mil/ir.h"

#define MIL_BUILD_INLINE_MAX 10 /* largest constant (elements) kept inline */

typedef struct mil_builder mil_builder;

/* The buildInfo a new builder's program carries, as direct-ANE projects send
 * it (docs/references.md §4: a coremlc buildInfo with
 * coremlc-version is reported as required; one line, keys sorted). */
#define MIL_BUILD_INFO_DEFAULT                                                                     \
    {                                                                                              \
        {"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"},                    \
            {"coremltools-component-milinternal", ""}, {                                           \
            "coremltools-version", "9.0"                                                           \
        }                                                                                          \
    }

/* model_dir: the model folder (weights go to model_dir/weights/weight.bin,
 * created on first use), or NULL to keep every constant inline. */
nc_status mil_builder_new(mil_builder **out, const char *model_dir, nc_error *err);
mil_program *mil_builder_program(mil_builder *b);
/* Adds or replaces one buildInfo entry (kept sorted by key), e.g. a nonce
 * that gives otherwise identical programs distinct compile-cache keys. */
nc_status mil_builder_build_info(mil_builder *b, const char *key, const char *value);
/* The first error (code NC_OK while none). */
const nc_error *mil_builder_error(const mil_builder *b);
/* Closes the weight file (renamed into place) and hands over the program;
 * the builder is freed. Fails if a function is still open or an error
 * happened (then nothing is left on disk). */
nc_status mil_builder_finish(mil_builder *b, mil_program **out, nc_error *err);
/* Frees an unfinished builder and its program; removes a partial weight file. */
void mil_builder_free(mil_builder *b);

/* --- functions ----------------------------------------------------------- */

/* Opens a function ("main", "ios18"); ops are appended to it until done. */
nc_status mil_build_function(mil_builder *b, const char *name, const char *opset);
mil_var *mil_build_input(mil_builder *b, const char *name, const mil_type *type);
/* Sets the function's outputs and closes it. */
nc_status mil_build_done(mil_builder *b, mil_var *const *outputs, int n);
/* A variable of the open function by name, or NULL (error set). */
mil_var *mil_build_var(mil_builder *b, const char *name);

/* --- generic ops --------------------------------------------------------- */

typedef struct mil_build_arg {
    const char *name;      /* argument name, e.g. "x" */
    mil_var *var;          /* the variable, or NULL to use `ref` / `tuple` */
    const char *ref;       /* an earlier variable by name */
    mil_var *const *tuple; /* for tuple arguments (concat's values): n_tuple items */
    int n_tuple;
} mil_build_arg;

/* Appends an op with one output; returns it or NULL. */
mil_var *mil_build_op(mil_builder *b, const char *type, const char *name, const mil_build_arg *args,
                      int n_args);
/* Appends an op with any number of outputs (named name_0, name_1, ...). */
nc_status mil_build_op_n(mil_builder *b, const char *type, const char *name,
                         const mil_build_arg *args, int n_args, mil_var **outs, int max_outs,
                         int *n_outs);

/* --- constants ----------------------------------------------------------- */

/* A const op holding `val` (inline or moved to the weight file by size). */
mil_var *mil_build_const(mil_builder *b, const char *name, const mil_value *val);
/* A tensor constant from data stored as in dtype.h (fp16 as uint16 bits). */
mil_var *mil_build_const_tensor(mil_builder *b, const char *name, mil_dtype dt, int rank,
                                const int64_t *dims, const void *data);
/* An fp16 tensor constant from fp32 values (rounded to nearest even). */
mil_var *mil_build_const_fp16(mil_builder *b, const char *name, int rank, const int64_t *dims,
                              const float *values);
mil_var *mil_build_const_i32(mil_builder *b, const char *name, int32_t v);
mil_var *mil_build_const_i32s(mil_builder *b, const char *name, int n, const int32_t *v);
mil_var *mil_build_const_bool(mil_builder *b, const char *name, int v);
mil_var *mil_build_const_str(mil_builder *b, const char *name, const char *s);
/* A scalar of a float dtype (fp16, fp32). */
mil_var *mil_build_const_scalar(mil_builder *b, const char *name, mil_dtype dt, double v);

/* --- helpers for lowering ------------------------------------------------ */

/* Elementwise: type is "add", "sub", "mul", "real_div", "pow", "maximum", ... */
mil_var *mil_build_binary(mil_builder *b, const char *type, const char *name, mil_var *x,
                          mil_var *y);
/* "relu", "sigmoid", "tanh", "exp", "sqrt", "silu", ... */
mil_var *mil_build_unary(mil_builder *b, const char *type, const char *name, mil_var *x);
mil_var *mil_build_add(mil_builder *b, const char *name, mil_var *x, mil_var *y);
mil_var *mil_build_mul(mil_builder *b, const char *name, mil_var *x, mil_var *y);
mil_var *mil_build_rsqrt(mil_builder *b, const char *name, mil_var *x, double epsilon);
mil_var *mil_build_gelu(mil_builder *b, const char *name, mil_var *x, const char *mode);
mil_var *mil_build_softmax(mil_builder *b, const char *name, mil_var *x, int axis);
/* 1x1 conv on [B, Cin, 1, S]: weight [cout, cin] (row-major fp32, stored as
 * fp16), optional bias [cout]. The ANE's fast linear layer. */
mil_var *mil_build_conv1x1(mil_builder *b, const char *name, mil_var *x, int64_t cout, int64_t cin,
                           const float *weight, const float *bias);
/* conv with explicit weight/bias variables, valid padding, unit strides. */
mil_var *mil_build_conv(mil_builder *b, const char *name, mil_var *x, mil_var *weight,
                        mil_var *bias, int groups);
mil_var *mil_build_matmul(mil_builder *b, const char *name, mil_var *x, mil_var *y, int transpose_x,
                          int transpose_y);
mil_var *mil_build_reshape(mil_builder *b, const char *name, mil_var *x, int rank,
                           const int32_t *shape);
mil_var *mil_build_transpose(mil_builder *b, const char *name, mil_var *x, int rank,
                             const int32_t *perm);
mil_var *mil_build_slice_by_size(mil_builder *b, const char *name, mil_var *x, int rank,
                                 const int32_t *begin, const int32_t *size);
/* stride NULL means all 1. */
mil_var *mil_build_slice_by_index(mil_builder *b, const char *name, mil_var *x, int rank,
                                  const int32_t *begin, const int32_t *end, const int32_t *stride);
mil_var *mil_build_concat(mil_builder *b, const char *name, mil_var *const *values, int n,
                          int axis);
/* num_splits > 0 splits evenly; else split_sizes (n entries). outs gets the
 * pieces (name_0, name_1, ...); returns the count or -1 on error. */
int mil_build_split(mil_builder *b, const char *name, mil_var *x, int axis, int num_splits,
                    const int32_t *split_sizes, mil_var **outs, int max_outs);
mil_var *mil_build_cast(mil_builder *b, const char *name, mil_var *x, mil_dtype dt);
/* type: "reduce_sum", "reduce_mean", "reduce_max", ... */
mil_var *mil_build_reduce(mil_builder *b, const char *type, const char *name, mil_var *x,
                          int n_axes, const int32_t *axes, int keep_dims);
mil_var *mil_build_layer_norm(mil_builder *b, const char *name, mil_var *x, int n_axes,
                              const int32_t *axes, mil_var *gamma, mil_var *beta, double eps);
mil_var *mil_build_select(mil_builder *b, const char *name, mil_var *cond, mil_var *a, mil_var *c);
mil_var *mil_build_gather(mil_builder *b, const char *name, mil_var *x, mil_var *indices, int axis);
mil_var *mil_build_expand_dims(mil_builder *b, const char *name, mil_var *x, int n_axes,
                               const int32_t *axes);
mil_var *mil_build_squeeze(mil_builder *b, const char *name, mil_var *x, int n_axes,
                           const int32_t *axes);

#endif
