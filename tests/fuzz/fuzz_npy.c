/* Fuzz target: the .npy parser must reject or accept any bytes without a
 * crash, leak or out-of-bounds read. */
#include <stddef.h>
#include <stdint.h>

#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nc_npy a;
    nc_error err;
    if (nc_npy_parse(data, size, "fuzz", &a, &err) == NC_OK) nc_npy_free(&a);
    return 0;
}
