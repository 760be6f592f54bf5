/* Fuzz target: an encoder bundle's manifest.json (read by `nectar parity`
 * and `--backend mil`) must be accepted or rejected with an error, never
 * crash or leak. */
#include <stddef.h>
#include <stdint.h>

#include "bundle/modernbert_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mb_manifest m;
    nc_error err;
    (void)mb_manifest_parse((const char *)data, size, "fuzz", &m, &err);
    return 0;
}
