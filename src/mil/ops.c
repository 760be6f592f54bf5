/* The MIL op table (see ops.h) and the generic argument validation that walks
 * it. Signatures follow coremltools' ops/defs (docs/references.md
 * §M.4); a later opset row replaces
 * the earlier one. Inference functions live in infer.c. */
#include "mil/ops.h"

#include <stdio.h>
#include <string.h>

#include "mil/infer.h"

/* dtype sets */
#define F16 MIL_DTBIT(MIL_DT_FP16)
#define F32 MIL_DTBIT(MIL_DT_FP32)
#define I8 MIL_DTBIT(MIL_DT_INT8)
#define I16 MIL_DTBIT(MIL_DT_INT16)
#define I32 MIL_DTBIT(MIL_DT_INT32)
#define U8 MIL_DTBIT(MIL_DT_UINT8)
#define U16 MIL_DTBIT(MIL_DT_UINT16)
#define U32 MIL_DTBIT(MIL_DT_UINT32)
#define BOOL MIL_DTBIT(MIL_DT_BOOL)
#define STR MIL_DTBIT(MIL_DT_STRING)
#define FLT (F16 | F32)
#define FI (F16 | F32 | I32)
#define FIB (F16 | F32 | I32 | BOOL)
#define WIDE (FIB | I8 | I16 | U8 | U16) /* iOS17 widening of data-movement ops */
#define IDX17 (I32 | I16 | U16 | I8 | U8)
#define SUBBYTE_IDX                                                                                \
    (MIL_DTBIT(MIL_DT_UINT1) | MIL_DTBIT(MIL_DT_UINT2) | MIL_DTBIT(MIL_DT_UINT3) |                 \
     MIL_DTBIT(MIL_DT_UINT4) | MIL_DTBIT(MIL_DT_UINT6) | U8)
#define BLOCK_SRC                                                                                  \
    (MIL_DTBIT(MIL_DT_INT4) | MIL_DTBIT(MIL_DT_UINT4) | I8 | U8 | FLT |                            \
     MIL_DTBIT(MIL_DT_FP8E4M3FN) | MIL_DTBIT(MIL_DT_FP8E5M2))

/* argument flags */
#define REQ 0u
#define OPT MIL_ARG_OPTIONAL
#define CONST MIL_ARG_CONST
#define TUPLE MIL_ARG_TUPLE
#define ANY MIL_ARG_ANY_TYPE

#define UNARY(op, doms)                                                                            \
    { op, 15, 0, {{"x", REQ, 'T', doms}}, mil_infer_same_as_x }
#define BINARY(op, doms, fn)                                                                       \
    { op, 15, 0, {{"x", REQ, 'T', doms}, {"y", REQ, 'T', doms}}, fn }
#define REDUCE(op, doms)                                                                           \
    {                                                                                              \
        op, 15, 0,                                                                                 \
            {{"x", REQ, 'T', doms},                                                                \
             {"axes", OPT | CONST, 0, I32},                                                        \
             {"keep_dims", OPT | CONST, 0, BOOL}},                                                 \
            mil_infer_reduce                                                                       \
    }

static const mil_op_def table[] = {
    {"const", 15, 0, {{NULL, 0, 0, 0}}, mil_infer_const},

    /* elementwise unary */
    UNARY("relu", FLT),
    UNARY("sigmoid", FLT),
    UNARY("tanh", FLT),
    UNARY("exp", FLT),
    UNARY("exp2", FI),
    UNARY("sqrt", FLT),
    UNARY("silu", FLT),
    UNARY("erf", FLT),
    UNARY("abs", FI),
    UNARY("sign", FI),
    UNARY("square", FI),
    UNARY("floor", FLT),
    UNARY("ceil", FLT),
    UNARY("round", FLT),
    UNARY("sin", FLT),
    UNARY("cos", FLT),
    UNARY("atan", FLT),
    UNARY("relu6", FLT),
    UNARY("softsign", FLT),
    UNARY("softplus", FLT),
    {"logical_not", 15, 0, {{"x", REQ, 'T', BOOL}}, mil_infer_same_as_x},
    {"rsqrt",
     15,
     0,
     {{"x", REQ, 'T', FLT}, {"epsilon", OPT | CONST, 'T', FLT}},
     mil_infer_same_as_x},
    {"rsqrt",
     17,
     0,
     {{"x", REQ, 'T', FLT}, {"epsilon", OPT | CONST, 'U', FLT}},
     mil_infer_same_as_x},
    {"inverse",
     15,
     0,
     {{"x", REQ, 'T', FLT}, {"epsilon", OPT | CONST, 'T', FLT}},
     mil_infer_same_as_x},
    {"inverse",
     17,
     0,
     {{"x", REQ, 'T', FLT}, {"epsilon", OPT | CONST, 'U', FLT}},
     mil_infer_same_as_x},
    {"log", 15, 0, {{"x", REQ, 'T', FLT}, {"epsilon", OPT | CONST, 'T', FLT}}, mil_infer_same_as_x},
    {"log", 17, 0, {{"x", REQ, 'T', FLT}, {"epsilon", OPT | CONST, 'U', FLT}}, mil_infer_same_as_x},
    {"clip",
     15,
     0,
     {{"x", REQ, 'T', FLT}, {"alpha", CONST, 'T', FLT}, {"beta", CONST, 'T', FLT}},
     mil_infer_same_as_x},
    {"leaky_relu", 15, 0, {{"x", REQ, 'T', FLT}, {"alpha", CONST, 'T', FLT}}, mil_infer_same_as_x},
    {"leaky_relu", 17, 0, {{"x", REQ, 'T', FLT}, {"alpha", CONST, 'U', FLT}}, mil_infer_same_as_x},
    {"gelu", 15, 0, {{"x", REQ, 'T', FLT}, {"mode", OPT | CONST, 0, STR}}, mil_infer_same_as_x},
    {"softmax", 15, 0, {{"x", REQ, 'T', FLT}, {"axis", OPT | CONST, 0, I32}}, mil_infer_softmax},
    {"band_part",
     15,
     0,
     {{"x", REQ, 'T', FIB}, {"lower", OPT | CONST, 0, I32}, {"upper", OPT | CONST, 0, I32}},
     mil_infer_same_as_x},
    {"layer_norm",
     15,
     0,
     {{"x", REQ, 'T', FLT},
      {"axes", OPT | CONST, 0, I32},
      {"gamma", OPT | CONST, 'T', FLT},
      {"beta", OPT | CONST, 'T', FLT},
      {"epsilon", OPT | CONST, 'T', FLT}},
     mil_infer_layer_norm},
    {"layer_norm",
     17,
     0,
     {{"x", REQ, 'T', FLT},
      {"axes", OPT | CONST, 0, I32},
      {"gamma", OPT | CONST, 'U', FLT},
      {"beta", OPT | CONST, 'U', FLT},
      {"epsilon", OPT | CONST, 'U', FLT}},
     mil_infer_layer_norm},

    /* elementwise binary (NumPy broadcasting) */
    BINARY("add", FI, mil_infer_broadcast),
    BINARY("sub", FI, mil_infer_broadcast),
    BINARY("mul", FI, mil_infer_broadcast),
    BINARY("real_div", FI, mil_infer_broadcast),
    BINARY("pow", FI, mil_infer_broadcast),
    BINARY("maximum", FI, mil_infer_broadcast),
    BINARY("minimum", FI, mil_infer_broadcast),
    BINARY("floor_div", FI, mil_infer_broadcast),
    BINARY("mod", FI, mil_infer_broadcast),
    BINARY("equal", FI, mil_infer_compare),
    BINARY("not_equal", FI, mil_infer_compare),
    BINARY("less", FI, mil_infer_compare),
    BINARY("less_equal", FI, mil_infer_compare),
    BINARY("greater", FI, mil_infer_compare),
    BINARY("greater_equal", FI, mil_infer_compare),
    BINARY("logical_and", BOOL, mil_infer_compare),
    BINARY("logical_or", BOOL, mil_infer_compare),
    BINARY("logical_xor", BOOL, mil_infer_compare),
    {"select",
     15,
     0,
     {{"cond", REQ, 0, BOOL}, {"a", REQ, 'T', FIB}, {"b", REQ, 'T', FIB}},
     mil_infer_select},

    /* linear algebra */
    {"conv",
     15,
     0,
     {{"x", REQ, 'T', FLT},
      {"weight", REQ, 'T', FLT},
      {"bias", OPT | CONST, 'T', FLT},
      {"strides", OPT | CONST, 0, I32},
      {"pad_type", OPT | CONST, 0, STR},
      {"pad", OPT | CONST, 0, I32},
      {"dilations", OPT | CONST, 0, I32},
      {"groups", OPT | CONST, 0, I32}},
     mil_infer_conv},
    {"conv",
     17,
     0,
     {{"x", REQ, 'T', FLT},
      {"weight", REQ, 'U', FLT},
      {"bias", OPT, 'U', FLT},
      {"strides", OPT | CONST, 0, I32},
      {"pad_type", OPT | CONST, 0, STR},
      {"pad", OPT | CONST, 0, I32},
      {"dilations", OPT | CONST, 0, I32},
      {"groups", OPT | CONST, 0, I32}},
     mil_infer_conv},
    {"matmul",
     15,
     0,
     {{"x", REQ, 'T', FI},
      {"y", REQ, 'T', FI},
      {"transpose_x", OPT | CONST, 0, BOOL},
      {"transpose_y", OPT | CONST, 0, BOOL}},
     mil_infer_matmul},
    {"matmul",
     17,
     0,
     {{"x", REQ, 'T', FI},
      {"y", REQ, 'U', FI},
      {"transpose_x", OPT | CONST, 0, BOOL},
      {"transpose_y", OPT | CONST, 0, BOOL}},
     mil_infer_matmul},
    {"linear",
     15,
     0,
     {{"x", REQ, 'T', FI}, {"weight", CONST, 'T', FI}, {"bias", OPT | CONST, 'T', FI}},
     mil_infer_linear},
    {"linear",
     17,
     0,
     {{"x", REQ, 'T', FI}, {"weight", CONST, 'U', FI}, {"bias", OPT | CONST, 'U', FI}},
     mil_infer_linear},
    {"scaled_dot_product_attention",
     18,
     0,
     {{"query", REQ, 'T', FLT},
      {"key", REQ, 'T', FLT},
      {"value", REQ, 'T', FLT},
      {"attn_mask", OPT, 0, FLT | BOOL}},
     mil_infer_sdpa},

    /* reductions */
    REDUCE("reduce_sum", FI),
    REDUCE("reduce_mean", FI),
    REDUCE("reduce_max", FI),
    REDUCE("reduce_min", FI),
    REDUCE("reduce_prod", FI),
    REDUCE("reduce_l2_norm", FI),
    REDUCE("reduce_log_sum_exp", FI),
    REDUCE("reduce_sum_square", FI),
    REDUCE("reduce_l1_norm", FI),
    REDUCE("reduce_log_sum", FI),
    {"reduce_argmax",
     15,
     0,
     {{"x", REQ, 'T', FI}, {"axis", OPT | CONST, 0, I32}, {"keep_dims", OPT | CONST, 0, BOOL}},
     mil_infer_argreduce},
    {"reduce_argmin",
     15,
     0,
     {{"x", REQ, 'T', FI}, {"axis", OPT | CONST, 0, I32}, {"keep_dims", OPT | CONST, 0, BOOL}},
     mil_infer_argreduce},
    {"reduce_argmax",
     17,
     0,
     {{"x", REQ, 'T', FI},
      {"axis", OPT | CONST, 0, I32},
      {"keep_dims", OPT | CONST, 0, BOOL},
      {"output_dtype", OPT | CONST, 0, STR}},
     mil_infer_argreduce},
    {"reduce_argmin",
     17,
     0,
     {{"x", REQ, 'T', FI},
      {"axis", OPT | CONST, 0, I32},
      {"keep_dims", OPT | CONST, 0, BOOL},
      {"output_dtype", OPT | CONST, 0, STR}},
     mil_infer_argreduce},

    /* shape and data movement */
    {"transpose", 15, 0, {{"x", REQ, 'T', FIB}, {"perm", CONST, 0, I32}}, mil_infer_transpose},
    {"transpose", 17, 0, {{"x", REQ, 'T', WIDE}, {"perm", CONST, 0, I32}}, mil_infer_transpose},
    {"reshape", 15, 0, {{"x", REQ, 'T', FIB}, {"shape", REQ, 0, I32}}, mil_infer_reshape},
    {"reshape",
     17,
     0,
     {{"x", REQ, 'T', WIDE}, {"shape", REQ, 'U', I8 | I16 | I32}},
     mil_infer_reshape},
    {"expand_dims", 15, 0, {{"x", REQ, 'T', FIB}, {"axes", CONST, 0, I32}}, mil_infer_expand_dims},
    {"expand_dims", 17, 0, {{"x", REQ, 'T', WIDE}, {"axes", CONST, 0, I32}}, mil_infer_expand_dims},
    {"squeeze", 15, 0, {{"x", REQ, 'T', FIB}, {"axes", OPT | CONST, 0, I32}}, mil_infer_squeeze},
    {"squeeze", 17, 0, {{"x", REQ, 'T', WIDE}, {"axes", OPT | CONST, 0, I32}}, mil_infer_squeeze},
    {"slice_by_index",
     15,
     0,
     {{"x", REQ, 'T', FIB},
      {"begin", REQ, 0, I32},
      {"end", REQ, 0, I32},
      {"stride", OPT | CONST, 0, I32},
      {"begin_mask", OPT | CONST, 0, BOOL},
      {"end_mask", OPT | CONST, 0, BOOL},
      {"squeeze_mask", OPT | CONST, 0, BOOL}},
     mil_infer_slice_by_index},
    {"slice_by_index",
     17,
     0,
     {{"x", REQ, 'T', WIDE},
      {"begin", REQ, 'U', I8 | I16 | I32},
      {"end", REQ, 'U', I8 | I16 | I32},
      {"stride", OPT | CONST, 'U', I8 | I16 | I32},
      {"begin_mask", OPT | CONST, 0, BOOL},
      {"end_mask", OPT | CONST, 0, BOOL},
      {"squeeze_mask", OPT | CONST, 0, BOOL}},
     mil_infer_slice_by_index},
    {"slice_by_size",
     15,
     0,
     {{"x", REQ, 'T', FIB}, {"begin", REQ, 0, I32}, {"size", REQ, 0, I32}},
     mil_infer_slice_by_size},
    {"slice_by_size",
     17,
     0,
     {{"x", REQ, 'T', WIDE},
      {"begin", REQ, 'U', I8 | I16 | I32},
      {"size", REQ, 'U', I8 | I16 | I32}},
     mil_infer_slice_by_size},
    {"concat",
     15,
     0,
     {{"values", TUPLE, 'T', FIB}, {"axis", CONST, 0, I32}, {"interleave", OPT | CONST, 0, BOOL}},
     mil_infer_concat},
    {"concat",
     17,
     0,
     {{"values", TUPLE, 'T', WIDE}, {"axis", CONST, 0, I32}, {"interleave", OPT | CONST, 0, BOOL}},
     mil_infer_concat},
    {"split",
     15,
     MIL_OP_MULTI_OUTPUT,
     {{"x", REQ, 'T', FIB},
      {"num_splits", OPT | CONST, 0, I32},
      {"split_sizes", OPT | CONST, 0, I32},
      {"axis", CONST, 0, I32}},
     mil_infer_split},
    {"tile", 15, 0, {{"x", REQ, 'T', FIB}, {"reps", REQ, 0, I32}}, mil_infer_tile},
    {"pad",
     15,
     0,
     {{"x", REQ, 'T', FLT},
      {"pad", REQ, 0, I32},
      {"mode", OPT | CONST, 0, STR},
      {"constant_val", OPT | CONST, 'T', FLT}},
     mil_infer_pad},
    {"fill", 15, 0, {{"shape", REQ, 0, I32}, {"value", OPT | CONST, 0, FIB}}, mil_infer_fill},
    {"cast", 15, 0, {{"x", REQ, 'T', FIB}, {"dtype", CONST, 0, STR}}, mil_infer_cast},
    {"cast", 17, 0, {{"x", REQ, 'T', WIDE}, {"dtype", CONST, 0, STR}}, mil_infer_cast},
    {"shape", 15, 0, {{"x", REQ, 'T', FIB}}, mil_infer_shape_op},

    /* gathers and scatters */
    {"gather",
     15,
     0,
     {{"x", REQ, 'T', FI}, {"indices", REQ, 'I', I32}, {"axis", OPT | CONST, 0, I32}},
     mil_infer_gather},
    {"gather",
     16,
     0,
     {{"x", REQ, 'T', FI},
      {"indices", REQ, 'I', I32 | I16 | U16},
      {"axis", OPT | CONST, 0, I32},
      {"batch_dims", OPT | CONST, 0, I32}},
     mil_infer_gather},
    {"gather",
     17,
     0,
     {{"x", REQ, 'T', FI | I8 | U8 | I16 | U16},
      {"indices", REQ, 'I', IDX17},
      {"axis", OPT | CONST, 0, I32},
      {"batch_dims", OPT | CONST, 0, I32},
      {"validate_indices", OPT | CONST, 0, BOOL}},
     mil_infer_gather},
    {"gather_along_axis",
     15,
     0,
     {{"x", REQ, 'T', FI}, {"indices", REQ, 'I', I32}, {"axis", OPT | CONST, 0, I32}},
     mil_infer_gather_along_axis},
    {"gather_along_axis",
     16,
     0,
     {{"x", REQ, 'T', FI}, {"indices", REQ, 'I', I32 | I16 | U16}, {"axis", OPT | CONST, 0, I32}},
     mil_infer_gather_along_axis},
    {"gather_along_axis",
     17,
     0,
     {{"x", REQ, 'T', FI | I8 | U8 | I16 | U16},
      {"indices", REQ, 'I', IDX17},
      {"axis", OPT | CONST, 0, I32},
      {"validate_indices", OPT | CONST, 0, BOOL}},
     mil_infer_gather_along_axis},
    {"scatter",
     15,
     0,
     {{"data", REQ, 'T', FI},
      {"indices", REQ, 0, I32},
      {"updates", REQ, 'T', FI},
      {"axis", OPT | CONST, 0, I32},
      {"mode", OPT | CONST, 0, STR}},
     mil_infer_same_as_data},
    {"scatter",
     17,
     0,
     {{"data", REQ, 'T', FI},
      {"indices", REQ, 0, I32},
      {"updates", REQ, 'T', FI},
      {"axis", OPT | CONST, 0, I32},
      {"mode", OPT | CONST, 0, STR},
      {"validate_indices", OPT | CONST, 0, BOOL}},
     mil_infer_same_as_data},
    {"scatter_along_axis",
     15,
     0,
     {{"data", REQ, 'T', FI},
      {"indices", REQ, 0, I32},
      {"updates", REQ, 'T', FI},
      {"axis", OPT | CONST, 0, I32},
      {"mode", OPT | CONST, 0, STR}},
     mil_infer_same_as_data},
    {"scatter_along_axis",
     17,
     0,
     {{"data", REQ, 'T', FI},
      {"indices", REQ, 0, I32},
      {"updates", REQ, 'T', FI},
      {"axis", OPT | CONST, 0, I32},
      {"mode", OPT | CONST, 0, STR},
      {"validate_indices", OPT | CONST, 0, BOOL}},
     mil_infer_same_as_data},
    {"scatter_nd",
     15,
     0,
     {{"data", REQ, 'T', FI},
      {"indices", REQ, 0, I32},
      {"updates", REQ, 'T', FI},
      {"mode", OPT | CONST, 0, STR}},
     mil_infer_same_as_data},
    {"scatter_nd",
     17,
     0,
     {{"data", REQ, 'T', FI},
      {"indices", REQ, 0, I32},
      {"updates", REQ, 'T', FI},
      {"mode", OPT | CONST, 0, STR},
      {"validate_indices", OPT | CONST, 0, BOOL}},
     mil_infer_same_as_data},
    {"slice_update",
     18,
     0,
     {{"x", REQ, 'T', WIDE},
      {"update", REQ, 'T', WIDE},
      {"begin", REQ, 'U', I8 | I16 | I32},
      {"end", REQ, 'U', I8 | I16 | I32},
      {"stride", OPT | CONST, 'U', I8 | I16 | I32},
      {"begin_mask", OPT | CONST, 0, BOOL},
      {"end_mask", OPT | CONST, 0, BOOL},
      {"squeeze_mask", OPT | CONST, 0, BOOL}},
     mil_infer_same_as_x},

    /* state (iOS18) */
    {"read_state", 18, MIL_OP_STATEFUL, {{"input", REQ | ANY, 0, 0}}, mil_infer_read_state},
    {"write_state",
     18,
     MIL_OP_STATEFUL | MIL_OP_NO_OUTPUT,
     {{"data", REQ, 'T', WIDE}, {"input", REQ | ANY, 0, 0}},
     mil_infer_none},

    /* compile-time decompression */
    {"constexpr_affine_dequantize",
     16,
     MIL_OP_CONSTEXPR,
     {{"quantized_data", CONST, 0, U8 | I8},
      {"zero_point", CONST, 0, U8 | I8 | F32},
      {"scale", CONST, 0, FLT},
      {"axis", CONST, 0, I32}},
     mil_infer_affine_dequantize},
    {"constexpr_lut_to_dense",
     16,
     MIL_OP_CONSTEXPR,
     {{"indices", CONST, 0, U8}, {"lut", CONST, 0, I8 | U8 | FLT}, {"shape", CONST, 0, U32}},
     mil_infer_lut16},
    {"constexpr_lut_to_dense",
     18,
     MIL_OP_CONSTEXPR,
     {{"indices", CONST, 0, SUBBYTE_IDX},
      {"lut", CONST, 0, I8 | U8 | FLT},
      {"vector_axis", OPT | CONST, 0, I32}},
     mil_infer_lut18},
    {"constexpr_blockwise_shift_scale",
     18,
     MIL_OP_CONSTEXPR,
     {{"data", CONST, 0, BLOCK_SRC},
      {"scale", CONST, 0, FLT},
      {"offset", OPT | CONST, 0, BLOCK_SRC}},
     mil_infer_blockwise},
    {"quantize",
     17,
     0,
     {{"input", REQ, 'T', FLT},
      {"scale", CONST, 'T', FLT},
      {"zero_point", OPT | CONST, 0, I8 | U8},
      {"axis", OPT | CONST, 0, I32},
      {"output_dtype", CONST, 0, STR}},
     mil_infer_quantize},
    {"dequantize",
     17,
     0,
     {{"input", REQ, 'T', I8 | U8},
      {"scale", CONST, 0, FLT},
      {"zero_point", OPT | CONST, 'T', I8 | U8},
      {"axis", OPT | CONST, 0, I32}},
     mil_infer_dequantize},

    /* E5RT partitioned dialect boundaries */
    {"tensor_buffer_to_tensor", 17, 0, {{"input", REQ | ANY, 0, 0}}, mil_infer_buffer_to_tensor},
    {"tensor_to_tensor_buffer",
     17,
     0,
     {{"input", REQ, 0, 0},
      {"strides", CONST, 0, MIL_DTBIT(MIL_DT_INT64) | I32},
      {"interleave_factors", OPT | CONST, 0, U8 | I32}},
     mil_infer_tensor_to_buffer},
};

#define N_TABLE (int)(sizeof table / sizeof table[0])

const mil_op_def *mil_op_table(int *n) {
    *n = N_TABLE;
    return table;
}

const mil_op_def *mil_op_lookup(const char *type, int opset) {
    const mil_op_def *best = NULL;
    if (!type) return NULL;
    for (int i = 0; i < N_TABLE; i++) {
        if (strcmp(table[i].type, type)) continue;
        if (opset && table[i].opset > opset) continue;
        if (!best || table[i].opset > best->opset) best = &table[i];
    }
    return best;
}

const mil_arg_spec *mil_op_def_arg(const mil_op_def *def, const char *name) {
    for (int i = 0; i < MIL_MAX_OP_ARGS && def->args[i].name; i++)
        if (!strcmp(def->args[i].name, name)) return &def->args[i];
    return NULL;
}

const char *mil_op_label(const mil_op *op, char *buf, size_t size) {
    const char *name = mil_op_name(op);
    if (name)
        snprintf(buf, size, "%s '%s'", op->type, name);
    else if (op->n_outputs && op->outputs[0]->name)
        snprintf(buf, size, "%s '%s'", op->type, op->outputs[0]->name);
    else
        snprintf(buf, size, "%s", op->type);
    return buf;
}

mil_var *mil_op_operand_var(const mil_op *op, const char *name) {
    return mil_op_input(op, name);
}

const mil_value *mil_op_operand(const mil_op *op, const char *name) {
    mil_var *v = mil_op_input(op, name);
    if (v) return v->cval;
    return mil_op_attr(op, name);
}

const mil_type *mil_op_operand_type(const mil_op *op, const char *name) {
    mil_var *v = mil_op_input(op, name);
    if (v) return v->type;
    const mil_value *a = mil_op_attr(op, name);
    return a ? a->type : NULL;
}

/* A variable known at compile time: a literal, a const output, or the
 * output of a constexpr op. */
static int is_compile_time(const mil_var *v) {
    return v->cval || (v->def && v->def->def && (v->def->def->flags & MIL_OP_CONSTEXPR));
}

nc_status mil_op_validate(const mil_op *op, nc_error *err) {
    char label[160];
    const mil_op_def *def = op->def;
    if (!def) {
        int v = mil_op_opset_version(op);
        const mil_op_def *later = mil_op_lookup(op->type, 0);
        if (later)
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "%s: not available before ios%d (function opset is %d)",
                           mil_op_label(op, label, sizeof label), later->opset, v);
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: unknown op type",
                       mil_op_label(op, label, sizeof label));
    }
    int constexpr_attrs = (def->flags & MIL_OP_CONSTEXPR) && op->n_args == 0;
    for (int i = 0; i < op->n_args; i++) {
        const mil_arg *a = &op->args[i];
        const mil_arg_spec *s = mil_op_def_arg(def, a->name);
        if (!s)
            return nc_fail(err, NC_ERR_INVALID, "%s: unknown argument '%s'",
                           mil_op_label(op, label, sizeof label), a->name);
        for (int j = 0; j < i; j++)
            if (!strcmp(op->args[j].name, a->name))
                return nc_fail(err, NC_ERR_INVALID, "%s: argument '%s' given twice",
                               mil_op_label(op, label, sizeof label), a->name);
        if (!!(s->flags & MIL_ARG_TUPLE) != !!a->is_tuple)
            return nc_fail(err, NC_ERR_INVALID, "%s: argument '%s' %s a tuple (a, b, ...)",
                           mil_op_label(op, label, sizeof label), a->name,
                           (s->flags & MIL_ARG_TUPLE) ? "must be" : "must not be");
        if ((s->flags & MIL_ARG_TUPLE) && a->n_items == 0)
            return nc_fail(err, NC_ERR_INVALID, "%s: argument '%s' is an empty tuple",
                           mil_op_label(op, label, sizeof label), a->name);
        for (int j = 0; j < a->n_items; j++)
            if ((s->flags & MIL_ARG_CONST) && !is_compile_time(a->items[j]))
                return nc_fail(err, NC_ERR_INVALID,
                               "%s: argument '%s' must be a compile-time constant",
                               mil_op_label(op, label, sizeof label), a->name);
    }
    mil_dtype bound[128] = {0}; /* type variable letter -> dtype */
    const char *bound_by[128] = {0};
    for (int k = 0; k < MIL_MAX_OP_ARGS && def->args[k].name; k++) {
        const mil_arg_spec *s = &def->args[k];
        const mil_arg *a = mil_op_arg(op, s->name);
        const mil_value *attr = constexpr_attrs ? mil_op_attr(op, s->name) : NULL;
        if (!a && !attr) {
            if (!(s->flags & MIL_ARG_OPTIONAL))
                return nc_fail(err, NC_ERR_INVALID, "%s: missing required argument '%s'",
                               mil_op_label(op, label, sizeof label), s->name);
            continue;
        }
        int n = a ? a->n_items : 1;
        for (int j = 0; j < n; j++) {
            const mil_type *t = a ? a->items[j]->type : attr->type;
            if (s->flags & MIL_ARG_ANY_TYPE) continue;
            if (!t || t->kind != MIL_TYPE_TENSOR)
                return nc_fail(err, NC_ERR_INVALID, "%s: argument '%s' must be a tensor",
                               mil_op_label(op, label, sizeof label), s->name);
            if (s->dtypes && !(s->dtypes & MIL_DTBIT(t->dtype)))
                return nc_fail(err, NC_ERR_INVALID,
                               "%s: argument '%s' has dtype %s, which the op does not accept",
                               mil_op_label(op, label, sizeof label), s->name,
                               mil_dtype_name(t->dtype));
            unsigned char d = (unsigned char)s->domain;
            if (!d || d >= 128) continue;
            if (!bound[d]) {
                bound[d] = t->dtype;
                bound_by[d] = s->name;
            } else if (bound[d] != t->dtype) {
                return nc_fail(err, NC_ERR_INVALID,
                               "%s: argument '%s' is %s but '%s' is %s (they must match)",
                               mil_op_label(op, label, sizeof label), s->name,
                               mil_dtype_name(t->dtype), bound_by[d], mil_dtype_name(bound[d]));
            }
        }
    }
    return NC_OK;
}

nc_status mil_op_infer(mil_program *prog, const mil_op *op, mil_infer_out *out, nc_error *err) {
    out->n = 0;
    NC_TRY(mil_op_validate(op, err));
    return op->def->infer(prog, op, out, err);
}
