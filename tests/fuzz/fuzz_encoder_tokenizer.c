/* Fuzz target: the encoder tokenizers on arbitrary bytes: the first byte
 * picks the SentencePiece-style BPE with byte fallback (even) or the
 * byte-level BPE with a TemplateProcessing post-processor (odd), both the
 * small committed ones of tests/fixtures/modernbert/. Encoding with special
 * tokens must reject invalid UTF-8 cleanly; ids must decode without a crash. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "text/tokenizer.h"

static tok_tokenizer *tok[2];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *paths[2] = {"tests/fixtures/modernbert/tok_spbpe/tokenizer.json",
                                   "tests/fixtures/modernbert/tok_bytelevel/tokenizer.json"};
    nc_error err;
    if (size == 0) return 0;
    int which = data[0] & 1;
    if (!tok[which] && tok_load(paths[which], &tok[which], &err) != NC_OK)
        return 0; /* run from the repository root */
    int32_t *ids;
    size_t n;
    if (tok_encode_special(tok[which], (const char *)data + 1, size - 1, &ids, &n, &err) != NC_OK)
        return 0;
    char *out;
    if (tok_decode(tok[which], ids, n, 1, &out, NULL, &err) == NC_OK) free(out);
    free(ids);
    return 0;
}
