/* Fuzz target: the safetensors header parser must accept or reject any
 * bytes without a crash, leak or out-of-bounds read; accepted tensors must
 * lie inside the buffer. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_tensor *t;
    int n;
    nc_error err;
    if (st_parse(data, size, "fuzz", &t, &n, &err) != NC_OK) return 0;
    for (int i = 0; i < n; i++) {
        const uint8_t *p = t[i].data;
        if (p < data || p + t[i].size_bytes > data + size) abort();
    }
    st_tensors_free(t, n);
    return 0;
}
