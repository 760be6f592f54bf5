/* Fuzz target: a bundle's manifest.json (read by `nectar run --backend mil`)
 * must be accepted or rejected with an error, never crash or leak. */
#include <stddef.h>
#include <stdint.h>

#include "bundle/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lower_manifest m;
    nc_error err;
    if (lower_manifest_parse((const char *)data, size, "fuzz", &m, &err) == NC_OK)
        lower_manifest_free(&m);
    return 0;
}
