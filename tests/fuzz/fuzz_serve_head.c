/* Fuzz target: request heads, judged by the gate before the HTTP library
 * sees them (src/serve/serve_head.c), as the bytes arrive. Input: the bytes
 * of a connection. Every prefix is judged as the gate would on a partial
 * read; the verdicts must be consistent with the whole: a prefix accepted
 * (200) means the whole is accepted with the same head, and a prefix
 * refused (an error) means the whole is refused too (a head the gate gave
 * up on could not have become valid). An accepted head ends with a blank
 * line inside the bytes, and the one skipped empty line is a CRLF. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    static const serve_head_limits lim = {256, 1024, 1000};
    char *buf = malloc(size ? size : 1); /* its own allocation: ASan sees any overread */
    if (!buf) return 0;
    memcpy(buf, data, size);
    serve_head_verdict whole, part;
    serve_head_check(buf, size, 0, &lim, &whole);
    if (whole.status == 200) {
        if (whole.head_len < 4 || whole.head_len > size ||
            memcmp(buf + whole.head_len - 4, "\r\n\r\n", 4) != 0)
            abort();
        if (whole.skip != 0 && (whole.skip != 2 || memcmp(buf, "\r\n", 2) != 0)) abort();
    }
    for (size_t k = 1; k < size; k++) {
        serve_head_check(buf, k, 0, &lim, &part);
        if (part.status == 200 && (whole.status != 200 || part.head_len != whole.head_len)) abort();
        if (part.status >= 400 && whole.status < 400) abort();
    }
    /* at the client's end of file nothing stays pending */
    serve_head_check(buf, size, 1, &lim, &part);
    if (size && part.status == 0) abort();
    free(buf);
    return 0;
}
