/* Fuzz target: the server's request-body parser and validator must turn any
 * bytes into either a complete request or an error naming a field, for both
 * endpoints, without a crash, leak or out-of-bounds read. */
#include <stddef.h>
#include <stdint.h>

#include "serve/serve_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int ep = 0; ep < 2; ep++) {
        serve_request req;
        serve_parse_error perr;
        nc_error err;
        if (serve_request_parse((const char *)data, size, (serve_endpoint)ep, &req, &perr, &err) ==
            NC_OK)
            serve_request_free(&req);
    }
    return 0;
}
