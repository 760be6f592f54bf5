/* Type and shape inference, one function per op family, referenced from the
 * op table (ops.c). Each reads the op's bound arguments (types and constant
 * values) and writes its output types; errors name the op and the argument.
 * Unknown dims (`?`) propagate as MIL_DIM_UNKNOWN. Internal to src/mil. */
#ifndef NC_MIL_INFER_H
#define NC_MIL_INFER_H

#include "mil/ops.h"

#define MIL_INFER_FN(name)                                                                         \
    nc_status name(mil_program *prog, const mil_op *op, mil_infer_out *out, nc_error *err)

MIL_INFER_FN(mil_infer_const);
MIL_INFER_FN(mil_infer_none);
MIL_INFER_FN(mil_infer_same_as_x);
MIL_INFER_FN(mil_infer_same_as_data);
MIL_INFER_FN(mil_infer_softmax);
MIL_INFER_FN(mil_infer_layer_norm);
MIL_INFER_FN(mil_infer_broadcast);
MIL_INFER_FN(mil_infer_compare);
MIL_INFER_FN(mil_infer_select);
MIL_INFER_FN(mil_infer_conv);
MIL_INFER_FN(mil_infer_matmul);
MIL_INFER_FN(mil_infer_linear);
MIL_INFER_FN(mil_infer_sdpa);
MIL_INFER_FN(mil_infer_reduce);
MIL_INFER_FN(mil_infer_argreduce);
MIL_INFER_FN(mil_infer_transpose);
MIL_INFER_FN(mil_infer_reshape);
MIL_INFER_FN(mil_infer_expand_dims);
MIL_INFER_FN(mil_infer_squeeze);
MIL_INFER_FN(mil_infer_slice_by_index);
MIL_INFER_FN(mil_infer_slice_by_size);
MIL_INFER_FN(mil_infer_concat);
MIL_INFER_FN(mil_infer_split);
MIL_INFER_FN(mil_infer_tile);
MIL_INFER_FN(mil_infer_pad);
MIL_INFER_FN(mil_infer_fill);
MIL_INFER_FN(mil_infer_cast);
MIL_INFER_FN(mil_infer_shape_op);
MIL_INFER_FN(mil_infer_gather);
MIL_INFER_FN(mil_infer_gather_along_axis);
MIL_INFER_FN(mil_infer_read_state);
MIL_INFER_FN(mil_infer_affine_dequantize);
MIL_INFER_FN(mil_infer_lut16);
MIL_INFER_FN(mil_infer_lut18);
MIL_INFER_FN(mil_infer_blockwise);
MIL_INFER_FN(mil_infer_quantize);
MIL_INFER_FN(mil_infer_dequantize);
MIL_INFER_FN(mil_infer_buffer_to_tensor);
MIL_INFER_FN(mil_infer_tensor_to_buffer);

#endif
