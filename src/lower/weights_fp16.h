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
#include "io/safetensors.h"

typedef struct lower_fp16_stats {
    size_t n_values;     /* converted */
    size_t n_saturated;  /* finite values beyond +/-65504, now +/-65504 */
    size_t n_nonfinite;  /* inf/NaN in the source */
} lower_fp16_stats;

/* Element i of a BF16/F16/F32 tensor as fp32 (exact). */
float lower_tensor_f32_at(const st_tensor *t, size_t i);

/* Converts `count` elements of t starting at element `first` into dst.
 * Fails (naming the tensor) for a dtype other than BF16/F16/F32. */
nc_status lower_tensor_to_fp16(nc_pool *pool, const st_tensor *t, size_t first, size_t count,
                               nc_fp16 *dst, lower_fp16_stats *stats, nc_error *err);

#endif
