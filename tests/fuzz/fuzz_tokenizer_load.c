/* Fuzz target: the tokenizer.json loader must accept or reject any bytes
 * without a crash, leak or out-of-bounds access; whatever it accepts must
 * then encode and decode a fixed text (with and without special tokens)
 * safely. Seeds: small hand-made tokenizer.json files. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "text/detok.h"
#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tok_tokenizer *t;
    nc_error err;
    if (tok_load_from_memory((const char *)data, size, "fuzz", &t, &err) != NC_OK) return 0;
    static const char text[] = "Hello <s> wor\xC3\xA9ld 123  \n\n<|end|>x";
    int32_t *ids;
    size_t n;
    if (tok_encode(t, text, sizeof text - 1, &ids, &n, &err) == NC_OK) {
        char *out;
        if (tok_decode(t, ids, n, 1, &out, NULL, &err) == NC_OK) free(out);
        size_t cap = tok_stream_cap(t);
        char *buf = malloc(cap);
        tok_stream s;
        tok_stream_init(&s, t);
        for (size_t i = 0; i < n && buf; i++)
            tok_stream_push(&s, ids[i], buf, cap);
        if (buf) tok_stream_flush(&s, buf, cap);
        free(buf);
        free(ids);
    }
    for (int32_t id = -1; id <= tok_vocab_size(t); id++)
        tok_token_bytes(t, id, NULL);
    tok_find(t, "<s>");
    tok_free(t);
    return 0;
}
