/* Bump-pointer arena (see arena.h). Blocks grow to fit large requests so a
 * single big allocation does not waste a block's tail. */
#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK_BYTES (64u * 1024u)
#define ARENA_ALIGN 16u

struct nc_arena_block {
    nc_arena_block *next;
    size_t size, used;
    /* followed by the payload; the header is padded to ARENA_ALIGN */
};

static size_t header_bytes(void) {
    return (sizeof(nc_arena_block) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
}

void *nc_arena_alloc(nc_arena *a, size_t size_bytes) {
    if (size_bytes > SIZE_MAX / 2) return NULL;
    size_t need = (size_bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (need == 0) need = ARENA_ALIGN;
    nc_arena_block *b = a->head;
    if (!b || b->size - b->used < need) {
        size_t size = need > ARENA_BLOCK_BYTES ? need : ARENA_BLOCK_BYTES;
        b = malloc(header_bytes() + size);
        if (!b) return NULL;
        b->size = size;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    unsigned char *p = (unsigned char *)b + header_bytes() + b->used;
    b->used += need;
    a->used_bytes += need;
    memset(p, 0, need);
    return p;
}

void *nc_arena_calloc(nc_arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return nc_arena_alloc(a, n * size);
}

char *nc_arena_strndup(nc_arena *a, const char *s, size_t n) {
    char *p = nc_arena_alloc(a, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *nc_arena_strdup(nc_arena *a, const char *s) {
    return nc_arena_strndup(a, s, strlen(s));
}

void *nc_arena_memdup(nc_arena *a, const void *p, size_t size_bytes) {
    void *q = nc_arena_alloc(a, size_bytes);
    if (q && p && size_bytes) memcpy(q, p, size_bytes);
    return q;
}

void nc_arena_free(nc_arena *a) {
    nc_arena_block *b = a->head;
    while (b) {
        nc_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_bytes = 0;
}
