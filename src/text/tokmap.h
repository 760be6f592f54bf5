/* The tokenizer's two hash tables, open addressing with linear probing:
 * spelling -> id for the vocabulary (keys point into storage the caller
 * owns), and (left id, right id) -> (merge rank, merged id) for BPE. Both
 * are filled once at load and only read afterwards. */
#ifndef NC_TEXT_TOKMAP_H
#define NC_TEXT_TOKMAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct tok_strmap_slot {
    const char *key; /* NULL: empty */
    uint32_t len;
    int32_t val;
} tok_strmap_slot;

typedef struct tok_strmap {
    tok_strmap_slot *slots;
    size_t mask; /* capacity - 1, capacity a power of two */
    size_t count;
} tok_strmap;

/* Room for at least n keys without rehashing (the tables never grow). */
nc_status tok_strmap_init(tok_strmap *m, size_t n, nc_error *err);
void tok_strmap_free(tok_strmap *m);
/* Inserts or, when the key is present, overwrites; the map must not be full
 * (init with the final count). Returns the previous value or -1. */
int32_t tok_strmap_put(tok_strmap *m, const char *key, size_t len, int32_t val);
/* The value for key, or -1. */
int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t len);

typedef struct tok_pairmap_slot {
    uint64_t key; /* (left << 32) | right, both ids + 1 so 0 means empty */
    uint32_t rank;
    int32_t merged;
} tok_pairmap_slot;

typedef struct tok_pairmap {
    tok_pairmap_slot *slots;
    size_t mask;
} tok_pairmap;

nc_status tok_pairmap_init(tok_pairmap *m, size_t n, nc_error *err);
void tok_pairmap_free(tok_pairmap *m);
/* Inserts or overwrites (a later duplicate merge wins, as in HF). */
void tok_pairmap_put(tok_pairmap *m, int32_t left, int32_t right, uint32_t rank, int32_t merged);
/* The slot for the pair, or NULL when the pair does not merge. */
const tok_pairmap_slot *tok_pairmap_get(const tok_pairmap *m, int32_t left, int32_t right);

#endif
