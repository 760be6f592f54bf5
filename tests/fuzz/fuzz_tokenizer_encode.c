/* Fuzz target: tok_encode on arbitrary bytes with a small committed
 * tokenizer (Qwen pipeline: added tokens, NFC, the Qwen2 split regex,
 * byte-level BPE). Invalid UTF-8 must be rejected cleanly; valid text must
 * decode back to its NFC form without a crash. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "text/tokenizer.h"

static tok_tokenizer *tok;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nc_error err;
    if (!tok && tok_load("tests/fixtures/tokenizer/qwenstyle/tokenizer.json", &tok, &err) != NC_OK)
        return 0; /* run from the repository root */
    int32_t *ids;
    size_t n;
    if (tok_encode(tok, (const char *)data, size, &ids, &n, &err) != NC_OK) return 0;
    char *out;
    if (tok_decode(tok, ids, n, 0, &out, NULL, &err) == NC_OK) free(out);
    free(ids);
    return 0;
}
