/* Reading a decoder's tensors from a Hugging Face folder's safetensors, for
 * every CPU model loader: found by name, dtype, shape and alignment checked
 * with errors naming the file and tensor, matrices left in the mmap (float,
 * or the U8 Q8/Q4 rows `nectar quantize` writes), small vectors widened to
 * fp32. */
#ifndef NC_MODELS_HF_TENSORS_H
#define NC_MODELS_HF_TENSORS_H

#include "cpu/cpu_matmul.h"
#include "io/hf_weights.h"

/* A float tensor (F32/F16/BF16) of exactly this shape (ndim <= 3); dir
 * names the folder in the not-found message. */
nc_status hft_find(const hf_weights *w, const char *dir, const char *name, int ndim,
                   const int64_t *shape, const st_tensor **out, nc_error *err);

/* A [rows, cols] matrix: float, or Q8/Q4 rows told apart by their bytes. */
nc_status hft_load_mat(const hf_weights *w, const char *dir, const char *name, int rows, int cols,
                       cpu_mat *out, nc_error *err);

/* A small float tensor of this shape widened into *dst (advanced past it);
 * *out points at it. */
nc_status hft_load_vec(const hf_weights *w, const char *dir, const char *name, int ndim,
                       const int64_t *shape, float **dst, const float **out, nc_error *err);

#endif
