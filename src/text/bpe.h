/* Byte-pair merging of one pre-token, as HF tokenizers' BPE model does it:
 * repeatedly merge the adjacent pair with the lowest merge rank (leftmost
 * first on ties), using a binary heap with lazy invalidation so a long word
 * costs O(n log n), not O(n^2). */
#ifndef NC_TEXT_BPE_H
#define NC_TEXT_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "text/tokmap.h"

/* Work buffers reused across words (one per encode call: not shared). */
typedef struct tok_bpe_scratch {
    int32_t *prev, *next;
    struct tok_bpe_entry *heap;
    size_t cap_syms, cap_heap;
} tok_bpe_scratch;

/* Merges ids[0..n) in place; *n_out receives the merged length. */
nc_status tok_bpe_merge(const tok_pairmap *merges, int32_t *ids, size_t n, size_t *n_out,
                        tok_bpe_scratch *s, nc_error *err);

void tok_bpe_scratch_free(tok_bpe_scratch *s);

#endif
