/* Fuzz target: the .npy parser must reject or accept any bytes without a
 * crash, leak or out-of-bounds read. An accepted array must hold shape x
 * element-size bytes and convert to float32 (what the tests compare with)
 * or be refused with an error. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nc_npy a;
    nc_error err;
    if (nc_npy_parse(data, size, "fuzz", &a, &err) != NC_OK) return 0;
    size_t count = 1;
    for (int d = 0; d < a.ndim; d++)
        count *= (size_t)a.shape[d];
    if (count != a.count || a.size_bytes != count * nc_npy_dtype_size(a.dtype)) abort();
    if (!nc_npy_dtype_descr(a.dtype)) abort();
    float *f;
    if (nc_npy_to_f32(&a, &f, &err) == NC_OK) free(f);
    nc_npy_free(&a);
    return 0;
}
