/* Random weights written straight into q8/q4 blocks (`gen-random --type`):
 * the folder `nectar quantize` would make from the random folder of the
 * same seed and dtype, byte for byte, without writing that folder first.
 * Each chunk the safetensors writer asks for is made from the source rows
 * it covers: those rows' random values (st_random_fill, from a block
 * boundary, so they equal a whole-tensor fill), then quantized by
 * quant_write_span as `nectar quantize` does; tensors in name order, as
 * `quantize` writes them (the order the reader lists them in). Memory is one
 * chunk's rows, whatever the model's size. */
#ifndef NC_MODELS_QUANT_RANDOM_H
#define NC_MODELS_QUANT_RANDOM_H

#include "cpu/cpu_kernels.h"
#include "io/safetensors_random.h"

typedef struct quant_random {
    st_random_plan *p;                      /* the source values */
    st_write_tensor t[ST_RANDOM_MAX_TENSORS]; /* what is stored: U8 blocks or as planned */
    cpu_wtype type[ST_RANDOM_MAX_TENSORS];  /* CPU_W_Q8/Q4, or CPU_W_N: stored as planned */
    int from[ST_RANDOM_MAX_TENSORS];        /* t[i] is the plan's tensor from[i] */
    void *src;                              /* one chunk's source rows */
    float *row_f32;
    uint8_t *row_q;
} quant_random;

/* The stored tensors of plan p, in name order, with every 2-D float one in
 * `type` blocks (quant_write_takes); q keeps a pointer to p. */
nc_status quant_random_init(quant_random *q, st_random_plan *p, cpu_wtype type,
                            nc_error *err);
/* st_fill_fn with ctx = q: bytes of q->t[index] (elements of a copied one). */
nc_status quant_random_fill(void *q, int index, size_t first, size_t n, void *dst, nc_error *err);
void quant_random_free(quant_random *q);

#endif
