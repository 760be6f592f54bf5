/* The real vocabulary the constrained-output tests walk: the demo model's
 * tokenizer (models/demo/tokenizer.json) and its mask table, with
 * <|im_end|> as the end of generation, and the steps of a walk under a
 * mask (random logits, the best allowed token, its bytes). Header-only. */
#ifndef NC_TESTS_DEMO_VOCAB_H
#define NC_TESTS_DEMO_VOCAB_H

#include <math.h>
#include <string.h>

#include "gen/token_mask.h"
#include "text/tokenizer.h"

static inline nc_status nc_test_demo_vocab(tok_tokenizer **t, tm_vocab **v, int32_t *eog,
                                           nc_error *err) {
    nc_status st = tok_load("models/demo/tokenizer.json", t, err);
    if (st != NC_OK) return st;
    *eog = tok_find(*t, "<|im_end|>");
    if (*eog < 0) {
        tok_free(*t);
        return nc_fail(err, NC_ERR_FORMAT, "models/demo/tokenizer.json: no <|im_end|>");
    }
    st = tm_vocab_new(*t, tok_vocab_size(*t), eog, 1, v, err);
    if (st != NC_OK) tok_free(*t);
    return st;
}

/* Random logits for one step of a walk (xorshift state *rng), closing
 * bytes a little likelier, so strings and containers end, and the end of
 * generation likelier still. */
static inline void nc_test_walk_logits(const tok_tokenizer *t, int n_vocab, int32_t eog,
                                       uint64_t *rng, float *logits) {
    for (int i = 0; i < n_vocab; i++) {
        *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
        logits[i] = (float)((double)(*rng >> 11) / 9007199254740992.0);
        size_t len = 0;
        const char *p = tok_token_bytes(t, i, &len);
        if (p && len && memchr(p, '"', len)) logits[i] += 0.6f;
        if (p && len && (memchr(p, '}', len) || memchr(p, ']', len))) logits[i] += 0.8f;
    }
    logits[eog] += 2.0f;
}

/* The best token the mask left, -1 when none. */
static inline int nc_test_walk_best(const float *logits, int n_vocab) {
    int best = -1;
    for (int i = 0; i < n_vocab; i++)
        if (isfinite(logits[i]) && (best < 0 || logits[i] > logits[best])) best = i;
    return best;
}

/* Appends the bytes of token id to out[0..*n) (room for cap - 1); -1 when
 * it does not fit. */
static inline int nc_test_walk_append(const tok_tokenizer *t, int32_t id, char *out, size_t *n,
                                      size_t cap) {
    size_t len = 0;
    const char *p = tok_token_bytes(t, id, &len);
    if (*n + len >= cap) return -1;
    memcpy(out + *n, p, len);
    *n += len;
    return 0;
}

#endif
