/* Aligned allocation helpers. */
#include "base/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

#define HUGE_PAGE_BYTES ((size_t)2 << 20)

void *nc_huge_alloc(size_t size_bytes, nc_huge *h) {
    h->region = NULL;
    h->region_bytes = 0;
    if (size_bytes == 0 || size_bytes > SIZE_MAX - 2 * HUGE_PAGE_BYTES) return NULL;
    size_t bytes = (size_bytes + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1);
    size_t region_bytes = bytes + HUGE_PAGE_BYTES;
    void *region = mmap(NULL, region_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)region + HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1));
#if defined(MADV_HUGEPAGE)
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    /* Fault every page in before use: on this VM a read() into untouched
     * huge pages took 2.3 s for 1.2 GB, against 0.1 s to touch them first
     * and 0.14 s to read. */
    for (size_t i = 0; i < bytes; i += 4096)
        p[i] = 0;
    h->region = region;
    h->region_bytes = region_bytes;
    return p;
}

void nc_huge_free(nc_huge *h) {
    if (h->region) munmap(h->region, h->region_bytes);
    h->region = NULL;
    h->region_bytes = 0;
}

int nc_huge_pages_available(void) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return 0;
    char line[128] = {0};
    int ok = fgets(line, sizeof line, f) != NULL && !strstr(line, "[never]");
    fclose(f);
    return ok;
#else
    return 0;
#endif
}
