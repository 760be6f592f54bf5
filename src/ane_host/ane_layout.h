/* How a logical ANE I/O tensor sits in its IOSurface: rows of the last
 * axis, each padded to a multiple of 64 bytes (32 fp16 values) and at
 * least 64 bytes, one row after another (docs/ane-rules.md: "a logical [256, 1]
 * occupies [256, 32]"). modelAttributes may report the strides itself
 * (NetworkStatusList RowStride/PlaneStride/BatchStride); ane_layout_from_
 * strides takes those, ane_layout_for computes the rule. Pad/unpad move a
 * dense logical tensor (fp32 or fp16 bits) into and out of that layout. */
#ifndef NC_ANE_HOST_ANE_LAYOUT_H
#define NC_ANE_HOST_ANE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define ANE_ROW_ALIGN_BYTES 64 /* hardware strides are multiples of 0x40 */
#define ANE_MIN_ROW_ELEMS 32   /* narrower rows fail at dispatch */

typedef enum ane_elem { ANE_ELEM_FP16 = 2, ANE_ELEM_FP32 = 4 } ane_elem; /* value = bytes */

typedef struct ane_layout {
    ane_elem elem;
    int64_t rows;     /* product of every axis but the last */
    int64_t width;    /* the last axis (logical values per row) */
    size_t row_bytes; /* stride between rows in the surface */
    size_t bytes;     /* rows * row_bytes: what the surface must hold */
} ane_layout;

/* The 64-byte-row layout of a rank 1..5 tensor. Fails (NC_ERR_RANGE,
 * naming `what`) on a non-positive dimension or a size that overflows. */
nc_status ane_layout_for(const char *what, ane_elem elem, int rank, const int64_t *shape,
                         ane_layout *out, nc_error *err);

/* The layout the runtime reports (row stride in bytes); checked to hold the
 * rows and to be 64-byte aligned. */
nc_status ane_layout_from_strides(const char *what, ane_elem elem, int64_t rows, int64_t width,
                                  size_t row_bytes, ane_layout *out, nc_error *err);

/* logical: rows * width dense values, row-major. surface: l->bytes bytes.
 * Padding bytes are written as zeros (a zero fp16/fp32 is all-zero bits). */
void ane_pad_f32(const ane_layout *l, const float *logical, void *surface);
void ane_pad_fp16(const ane_layout *l, const uint16_t *logical, void *surface);
/* The inverse: the logical values out of a surface, as fp32 or fp16 bits. */
void ane_unpad_f32(const ane_layout *l, const void *surface, float *logical);
void ane_unpad_fp16(const ane_layout *l, const void *surface, uint16_t *logical);

/* Column `col` of every row as fp32 (rows values): the one token whose
 * logits are wanted out of a 32-wide head output, without converting the
 * other 31 columns. */
void ane_unpad_column_f32(const ane_layout *l, const void *surface, int64_t col, float *out);

/* Copies n columns of every row between two fp16 surface layouts with the
 * same rows: column (src_col + k) mod src width into column (dst_col + k)
 * mod dst width, k < n. zero_dst: the destination's other columns become
 * zero (the head takes the last token alone in column 0; a Qwen3.5 step or
 * prefill takes its tokens in order from column 0), else they keep their
 * values (the tokens going back into their chunk columns). */
nc_status ane_copy_columns_fp16(const ane_layout *src_l, const void *src, int64_t src_col,
                                const ane_layout *dst_l, void *dst, int64_t dst_col, int64_t n,
                                int zero_dst, nc_error *err);

#endif
