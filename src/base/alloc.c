/* Aligned allocation helpers. */
#include "base/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *nc_alloc_aligned(size_t size_bytes) {
    if (size_bytes == 0) return NULL;
    size_t rounded = (size_bytes + NC_ALIGN - 1) & ~(size_t)(NC_ALIGN - 1);
    if (rounded < size_bytes) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, NC_ALIGN, rounded) != 0) return NULL;
    memset(p, 0, rounded);
    return p;
}

void nc_free_aligned(void *p) { free(p); }

size_t nc_mul_size(size_t a, size_t b, int *overflow) {
    if (a != 0 && b > SIZE_MAX / a) {
        *overflow = 1;
        return 0;
    }
    return a * b;
}
