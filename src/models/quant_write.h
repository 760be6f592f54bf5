/* Writing a block-quantized copy of a model folder (`nectar quantize`):
 * every 2-D floating-point tensor (the matrices, embedding and LM head
 * included) becomes a U8 tensor [rows, row bytes] of Q8 or Q4 blocks
 * (cpu_quant.h), the other tensors (norms) are copied unchanged, and the
 * folder's other files (config, tokenizer) are copied, so the result loads
 * through qwen3_load like the original. Layout: docs/performance.md. */
#ifndef NC_MODELS_QUANT_WRITE_H
#define NC_MODELS_QUANT_WRITE_H

#include "base/error.h"
#include "cpu/cpu_kernels.h"

typedef struct quant_write_stats {
    int n_quantized, n_copied;  /* tensors */
    size_t bytes_in, bytes_out; /* tensor data */
} quant_write_stats;

/* type: CPU_W_Q8 or CPU_W_Q4. out_dir is created if missing and must not be
 * in_dir; its model.safetensors appears only when complete. */
nc_status quant_write_model(const char *in_dir, const char *out_dir, cpu_wtype type,
                            quant_write_stats *stats, nc_error *err);

#endif
