/* Fuzz target: the safetensors header parser must accept or reject any
 * bytes without a crash, leak or out-of-bounds read. Accepted tensors must
 * lie inside the buffer, hold exactly shape x dtype-size bytes, and come
 * sorted by name, each with a dtype that has a name. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_tensor *t;
    int n;
    nc_error err;
    if (st_parse(data, size, "fuzz", &t, &n, &err) != NC_OK) return 0;
    for (int i = 0; i < n; i++) {
        const uint8_t *p = t[i].data;
        if (p < data || p + t[i].size_bytes > data + size) abort();
        size_t elems = 1;
        for (int d = 0; d < t[i].ndim; d++)
            elems *= (size_t)t[i].shape[d];
        if (elems != t[i].n_elems || t[i].size_bytes != elems * st_dtype_size(t[i].dtype)) abort();
        const char *dt = st_dtype_name(t[i].dtype);
        if (!dt || !dt[0]) abort();
        if (i && strcmp(t[i - 1].name, t[i].name) >= 0) abort();
    }
    st_tensors_free(t, n);
    return 0;
}
