/* BPE merge loop (see bpe.h). Symbols form a doubly linked list over the
 * word; a merge keeps the left symbol and unlinks the right one. Heap
 * entries remember the merged id they were pushed for, so an entry whose
 * pair has since changed is recognised and skipped when popped. */
#include "text/bpe.h"

#include <stdlib.h>

typedef struct tok_bpe_entry {
    uint32_t rank;
    int32_t pos;
    int32_t merged;
} tok_bpe_entry;

static int entry_before(const tok_bpe_entry *a, const tok_bpe_entry *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(tok_bpe_entry *h, size_t *n, tok_bpe_entry e) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!entry_before(&e, &h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = e;
}

static tok_bpe_entry heap_pop(tok_bpe_entry *h, size_t *n) {
    tok_bpe_entry top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && entry_before(&h[c + 1], &h[c])) c++;
        if (!entry_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

static nc_status reserve(tok_bpe_scratch *s, size_t n, nc_error *err) {
    /* Each merge pushes at most two entries, on top of the n - 1 initial ones. */
    size_t need_heap = 3 * n;
    if (n > s->cap_syms) {
        size_t cap = n < 64 ? 64 : n * 2;
        int32_t *p = realloc(s->prev, cap * sizeof *p);
        if (!p)
            return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (BPE word of %zu bytes)",
                           n);
        s->prev = p;
        p = realloc(s->next, cap * sizeof *p);
        if (!p)
            return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (BPE word of %zu bytes)",
                           n);
        s->next = p;
        s->cap_syms = cap;
    }
    if (need_heap > s->cap_heap) {
        size_t cap = need_heap < 192 ? 192 : need_heap * 2;
        tok_bpe_entry *h = realloc(s->heap, cap * sizeof *h);
        if (!h)
            return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (BPE word of %zu bytes)",
                           n);
        s->heap = h;
        s->cap_heap = cap;
    }
    return NC_OK;
}

static void push_pair(const tok_pairmap *merges, const int32_t *ids, int32_t left, int32_t right,
                      tok_bpe_entry *heap, size_t *n_heap) {
    const tok_pairmap_slot *m = tok_pairmap_get(merges, ids[left], ids[right]);
    if (m) heap_push(heap, n_heap, (tok_bpe_entry){m->rank, left, m->merged});
}

nc_status tok_bpe_merge(const tok_pairmap *merges, int32_t *ids, size_t n, size_t *n_out,
                        tok_bpe_scratch *s, nc_error *err) {
    *n_out = n;
    if (n < 2) return NC_OK;
    NC_TRY(reserve(s, n, err));
    int32_t *prev = s->prev, *next = s->next;
    size_t n_heap = 0;
    for (size_t i = 0; i < n; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++)
        push_pair(merges, ids, (int32_t)i, (int32_t)i + 1, s->heap, &n_heap);

    while (n_heap) {
        tok_bpe_entry e = heap_pop(s->heap, &n_heap);
        int32_t pos = e.pos, right = next[pos];
        if (ids[pos] < 0 || right < 0) continue; /* merged away, or now the last symbol */
        const tok_pairmap_slot *m = tok_pairmap_get(merges, ids[pos], ids[right]);
        if (!m || m->merged != e.merged) continue; /* stale entry */
        ids[pos] = e.merged;
        ids[right] = -1;
        next[pos] = next[right];
        if (next[pos] >= 0) prev[next[pos]] = pos;
        if (prev[pos] >= 0) push_pair(merges, ids, prev[pos], pos, s->heap, &n_heap);
        if (next[pos] >= 0) push_pair(merges, ids, pos, next[pos], s->heap, &n_heap);
    }
    size_t o = 0;
    for (int32_t i = 0; i >= 0; i = next[i])
        ids[o++] = ids[i];
    *n_out = o;
    return NC_OK;
}

void tok_bpe_scratch_free(tok_bpe_scratch *s) {
    free(s->prev);
    free(s->next);
    free(s->heap);
    s->prev = s->next = NULL;
    s->heap = NULL;
    s->cap_syms = s->cap_heap = 0;
}
