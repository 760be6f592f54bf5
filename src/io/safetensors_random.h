/* Random weights for safetensors files at real model shapes (gen-random):
 * a plan of named tensors and the st_fill_fn (safetensors_write.h) that
 * fills them over the thread pool, in blocks of 64 Ki values, with the same
 * bytes for a seed whatever the thread count. Matrices have std 0.02, norm
 * weights 1 + that. Two value schemes, so that folders written before the
 * two generators shared this file keep their bytes (docs quote figures
 * measured on them): the Qwen3 one approximates a normal by the sum of four
 * uniforms (one splitmix stream per block), the ModernBERT one is uniform
 * from a counter-based hash of (seed, tensor, element). */
#ifndef NC_IO_SAFETENSORS_RANDOM_H
#define NC_IO_SAFETENSORS_RANDOM_H

#include <stdint.h>

#include "base/pool.h"
#include "io/safetensors_write.h"

#define ST_RANDOM_MAX_TENSORS 1024
/* A tensor's values come in blocks of this many elements, each from
 * (seed, tensor, block) alone: st_random_fill must start at a multiple of it
 * to give the same values as a whole-tensor fill. */
#define ST_RANDOM_BLOCK ((size_t)1 << 16)

typedef enum { ST_RANDOM_SUM4, ST_RANDOM_UNIFORM } st_random_kind;

typedef struct st_random_plan {
    st_write_tensor t[ST_RANDOM_MAX_TENSORS];
    char names[ST_RANDOM_MAX_TENSORS][96];
    unsigned char base_one[ST_RANDOM_MAX_TENSORS]; /* norm weights: 1 + noise */
    int n;
    st_random_kind kind;
    uint64_t seed; /* already mixed by the caller */
    nc_pool *pool; /* the caller's */
} st_random_plan;

/* Appends tensor `name` of shape [d0] (d1 == 0) or [d0, d1]; beyond
 * ST_RANDOM_MAX_TENSORS it is dropped and p->n stays at the maximum. */
void st_random_add(st_random_plan *p, const char *name, st_dtype dt, int64_t d0, int64_t d1,
                   int base_one);
/* st_fill_fn with ctx = the plan: values of p->t[index], elements
 * first .. first+n-1 (first a multiple of ST_RANDOM_BLOCK). */
nc_status st_random_fill(void *plan, int index, size_t first, size_t n, void *dst, nc_error *err);
/* Bytes of every tensor of the plan. */
size_t st_random_bytes(const st_random_plan *p);
/* splitmix64's finaliser: a well-mixed 64-bit hash of z. */
uint64_t st_random_mix(uint64_t z);

#endif
