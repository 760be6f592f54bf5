/* Checkpoint tensors (bf16, fp16 or fp32 in the safetensors mmap) to the
 * ANE's fp16, in parallel over the thread pool. Values beyond fp16's range
 * (bf16 and fp32 reach 3.4e38) SATURATE to +/-65504 and are counted, so the
 * compile can report them; infinities and NaNs of the source stay as they
 * are (and are counted separately: a checkpoint should have none). */
#ifndef NC_LOWER_WEIGHTS_FP16_H
#define NC_LOWER_WEIGHTS_FP16_H

#include <stddef.h>

#include "base/half.h"
#include "base/pool.h"
#include "io/hf_weights.h"
#include "io/safetensors.h"
#include "bundle/bundle_forms.h"
#include "lower/lower_ops.h"


/* Element i of a BF16/F16/F32 tensor as fp32 (exact). */
float lower_tensor_f32_at(const st_tensor *t, size_t i);

/* Converts `count` elements of t starting at element `first` into dst.
 * Fails (naming the tensor) for a dtype other than BF16/F16/F32. */
nc_status lower_tensor_to_fp16(nc_pool *pool, const st_tensor *t, size_t first, size_t count,
                               nc_fp16 *dst, lower_fp16_stats *stats, nc_error *err);

/* The checkpoint tensor `name` of model_dir with exactly the shape [d0]
 * (d1 == 0) or [d0, d1]; the error names the tensor and the shape expected. */
nc_status lower_tensor_find(const hf_weights *w, const char *model_dir, const char *name,
                            int64_t d0, int64_t d1, const st_tensor **out, nc_error *err);
/* The same tensor converted into a new fp16 buffer held by out->data (the
 * caller frees it); out->val is reset. */
nc_status lower_tensor_load_fp16(const hf_weights *w, nc_pool *pool, const char *model_dir,
                                 const char *name, int64_t d0, int64_t d1, lower_fp16_stats *stats,
                                 lower_weight *out, nc_error *err);

#endif
