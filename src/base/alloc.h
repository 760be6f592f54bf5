/* Aligned allocation (64-byte: one cache line, one AVX-512 vector, one ANE
 * row) and an overflow-checked size product. */
#ifndef NC_BASE_ALLOC_H
#define NC_BASE_ALLOC_H

#include <stddef.h>

#define NC_ALIGN 64

/* Returns NULL on failure or size 0; free with nc_free_aligned. Zeroed. */
void *nc_alloc_aligned(size_t size_bytes);
void nc_free_aligned(void *p);

/* a * b, or 0 with *overflow set when it does not fit in size_t. */
size_t nc_mul_size(size_t a, size_t b, int *overflow);

#endif
