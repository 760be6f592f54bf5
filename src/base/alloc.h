/* Aligned allocation (64-byte: one cache line, one AVX-512 vector, one ANE
 * row) and an overflow-checked size product. */
#ifndef NC_BASE_ALLOC_H
#define NC_BASE_ALLOC_H

#include <stddef.h>

#define NC_ALIGN 64

/* Returns NULL on failure or size 0; free with nc_free_aligned. Zeroed. */
void *nc_alloc_aligned(size_t size_bytes);
void nc_free_aligned(void *p);

/* Large read-mostly arrays (model weights, bandwidth probes): 2 MiB aligned,
 * with transparent huge pages asked for (Linux madvise; elsewhere plain
 * pages) and every page faulted in, so nothing faults later in a timed
 * loop. Streaming a 1.2 GB model's weights on huge pages ran 1.12-1.6x
 * faster than from the mmapped file on a Zen 5 VM (docs/performance.md):
 * fewer TLB misses under nested paging, and prefetchers that do not stop
 * every 4 KiB. Not zeroed. NULL on failure; free with nc_huge_free. */
typedef struct nc_huge {
    void *region; /* the mapping, larger than asked for the alignment */
    size_t region_bytes;
} nc_huge;
void *nc_huge_alloc(size_t size_bytes, nc_huge *h);
void nc_huge_free(nc_huge *h);
/* 1 where the system can give huge pages to a region that asks
 * (Linux: /sys/kernel/mm/transparent_hugepage/enabled is not [never]). */
int nc_huge_pages_available(void);

/* a * b, or 0 with *overflow set when it does not fit in size_t. */
size_t nc_mul_size(size_t a, size_t b, int *overflow);

#endif
