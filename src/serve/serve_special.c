/* Special-token texts in chat messages (see serve_special.h). The list is
 * short (Qwen3 has 26 special tokens), all starting with '<' in the models
 * served, but any first byte works: each candidate position is the first
 * byte of some token. */
#include "serve/serve_special.h"

#include <stdlib.h>
#include <string.h>

struct serve_special {
    const char **text; /* borrowed from the tokenizer */
    size_t *len;
    size_t n;
    unsigned char first[256]; /* 1: some token starts with this byte */
};

nc_status serve_special_new(const tok_tokenizer *t, serve_special **out, nc_error *err) {
    *out = NULL;
    serve_special *s = calloc(1, sizeof *s);
    int32_t n_ids = tok_vocab_size(t);
    size_t n = 0;
    for (int32_t id = 0; id < n_ids; id++)
        n += tok_is_special(t, id) != 0;
    if (s) {
        s->text = calloc(n + 1, sizeof *s->text);
        s->len = calloc(n + 1, sizeof *s->len);
    }
    if (!s || !s->text || !s->len) {
        serve_special_free(s);
        return nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    }
    for (int32_t id = 0; id < n_ids; id++) {
        size_t len = 0;
        const char *text = tok_is_special(t, id) ? tok_token_bytes(t, id, &len) : NULL;
        if (!text || !len) continue;
        s->text[s->n] = text;
        s->len[s->n++] = len;
        s->first[(unsigned char)text[0]] = 1;
    }
    *out = s;
    return NC_OK;
}

void serve_special_free(serve_special *s) {
    if (!s) return;
    free(s->text);
    free(s->len);
    free(s);
}

const char *serve_special_find(const serve_special *s, const char *text, size_t len,
                               size_t *tok_len) {
    if (!s || !text) return NULL;
    for (size_t i = 0; i < len; i++) {
        if (!s->first[(unsigned char)text[i]]) continue;
        for (size_t k = 0; k < s->n; k++)
            if (s->len[k] <= len - i && !memcmp(text + i, s->text[k], s->len[k])) {
                *tok_len = s->len[k];
                return s->text[k];
            }
    }
    return NULL;
}
