/* Writing a block-quantized copy of a model folder (`nectar quantize`):
 * every 2-D floating-point tensor (the matrices, embedding and LM head
 * included) becomes a U8 tensor [rows, row bytes] of Q8 or Q4 blocks
 * (cpu_quant.h), the other tensors (norms) are copied unchanged, and the
 * folder's other files (config, tokenizer) are copied, so the result loads
 * through qwen3_load like the original. Layout: docs/performance.md. */
#ifndef NC_MODELS_QUANT_WRITE_H
#define NC_MODELS_QUANT_WRITE_H

#include <stdint.h>

#include "base/error.h"
#include "cpu/cpu_kernels.h"
#include "io/safetensors_write.h"

typedef struct quant_write_stats {
    int n_quantized, n_copied;  /* tensors */
    size_t bytes_in, bytes_out; /* tensor data */
} quant_write_stats;

/* type: CPU_W_Q8 or CPU_W_Q4. out_dir is created if missing and must not be
 * in_dir; its model.safetensors appears only when complete. */
/* Whether a tensor of ndim dimensions, dtype dt and `cols` columns is
 * quantized (a 2-D floating-point one), and its stored form when it is:
 * U8 [rows, row bytes of `type`]. */
int quant_write_takes(int ndim, st_dtype dt, int64_t cols);
void quant_write_stored_shape(st_write_tensor *t, cpu_wtype type);

/* Bytes [first, first + n) of the stored form (type) of a float matrix of
 * `cols` columns: src holds its rows from row first / row bytes on, as dt.
 * row_f32 has room for cols floats, row_q for one stored q8 row. Shared by
 * `nectar quantize` and `gen-random --type` (quant_random.h), so both write
 * the same bytes for the same values. */
void quant_write_span(cpu_wtype type, st_dtype dt, int cols, const void *src, size_t first,
                      size_t n, float *row_f32, uint8_t *row_q, void *dst);

nc_status quant_write_model(const char *in_dir, const char *out_dir, cpu_wtype type,
                            quant_write_stats *stats, nc_error *err);

#endif
