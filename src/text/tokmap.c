/* Hash tables of the tokenizer (see tokmap.h). Capacity is at least twice
 * the number of keys, so probe sequences stay short. */
#include "text/tokmap.h"

#include <stdlib.h>
#include <string.h>

static size_t capacity_for(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 1)
        cap <<= 1;
    return cap;
}

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) { /* splitmix64 finaliser */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

nc_status tok_strmap_init(tok_strmap *m, size_t n, nc_error *err) {
    size_t cap = capacity_for(n);
    m->slots = calloc(cap, sizeof *m->slots);
    m->mask = cap - 1;
    m->count = 0;
    if (!m->slots)
        return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (%zu map slots)", cap);
    return NC_OK;
}

void tok_strmap_free(tok_strmap *m) {
    free(m->slots);
    m->slots = NULL;
}

int32_t tok_strmap_put(tok_strmap *m, const char *key, size_t len, int32_t val) {
    size_t i = hash_bytes(key, len) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        tok_strmap_slot *s = &m->slots[i];
        if (!s->key) {
            s->key = key;
            s->len = (uint32_t)len;
            s->val = val;
            m->count++;
            return -1;
        }
        if (s->len == len && memcmp(s->key, key, len) == 0) {
            int32_t old = s->val;
            s->val = val;
            return old;
        }
    }
}

int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t len) {
    size_t i = hash_bytes(key, len) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        const tok_strmap_slot *s = &m->slots[i];
        if (!s->key) return -1;
        if (s->len == len && memcmp(s->key, key, len) == 0) return s->val;
    }
}

nc_status tok_pairmap_init(tok_pairmap *m, size_t n, nc_error *err) {
    size_t cap = capacity_for(n);
    m->slots = calloc(cap, sizeof *m->slots);
    m->mask = cap - 1;
    if (!m->slots)
        return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (%zu map slots)", cap);
    return NC_OK;
}

void tok_pairmap_free(tok_pairmap *m) {
    free(m->slots);
    m->slots = NULL;
}

static uint64_t pair_key(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)(left + 1) << 32) | (uint32_t)(right + 1);
}

void tok_pairmap_put(tok_pairmap *m, int32_t left, int32_t right, uint32_t rank, int32_t merged) {
    uint64_t key = pair_key(left, right);
    size_t i = hash_u64(key) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        tok_pairmap_slot *s = &m->slots[i];
        if (s->key == 0 || s->key == key) {
            s->key = key;
            s->rank = rank;
            s->merged = merged;
            return;
        }
    }
}

const tok_pairmap_slot *tok_pairmap_get(const tok_pairmap *m, int32_t left, int32_t right) {
    uint64_t key = pair_key(left, right);
    size_t i = hash_u64(key) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        const tok_pairmap_slot *s = &m->slots[i];
        if (s->key == key) return s;
        if (s->key == 0) return NULL;
    }
}
