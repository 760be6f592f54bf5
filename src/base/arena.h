/* A bump-pointer arena: many small allocations that all die together (a
 * parsed MIL program, a tokenizer's tables). Blocks are chained; one
 * nc_arena_free releases everything. Allocations are zeroed and 16-aligned. */
#ifndef NC_BASE_ARENA_H
#define NC_BASE_ARENA_H

#include <stddef.h>

typedef struct nc_arena_block nc_arena_block;

typedef struct nc_arena {
    nc_arena_block *head; /* current block; older blocks are chained behind it */
    size_t used_bytes;    /* total handed out, for statistics */
} nc_arena;

/* Returns zeroed memory or NULL on OOM/overflow. An empty arena is {0}. */
void *nc_arena_alloc(nc_arena *a, size_t size_bytes);
/* n * size with overflow check; zeroed. */
void *nc_arena_calloc(nc_arena *a, size_t n, size_t size);
/* Copies a string (or n bytes + NUL) into the arena; NULL on OOM. */
char *nc_arena_strdup(nc_arena *a, const char *s);
char *nc_arena_strndup(nc_arena *a, const char *s, size_t n);
void *nc_arena_memdup(nc_arena *a, const void *p, size_t size_bytes);
/* Releases every block; the arena is empty (and reusable) afterwards. */
void nc_arena_free(nc_arena *a);

#endif
