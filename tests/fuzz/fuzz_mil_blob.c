/* Fuzz target: the weight.bin reader must validate any bytes without a
 * crash or out-of-bounds read: the header, every record the header claims,
 * and records at arbitrary offsets checked against arbitrary tensor types. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mil/mil_blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mil_blob_file f;
    nc_error err;
    if (mil_blob_open_memory(data, size, "fuzz", &f, &err) != NC_OK) return 0;
    mil_blob_entry *e;
    size_t n;
    if (mil_blob_list(&f, &e, &n, &err) == NC_OK) {
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            for (uint64_t k = 0; k < e[i].size_bytes; k++)
                sum += e[i].data[k]; /* touch every byte */
            mil_blob_check_type(&f, &e[i], e[i].dtype, e[i].size_bytes, "t", &err);
        }
        free(e);
        volatile uint64_t keep = sum; /* the reads must happen */
        (void)keep;
    }
    for (uint64_t off = 64; off < size; off += 64) {
        mil_blob_entry one;
        if (mil_blob_entry_at(&f, off, &one, &err) == NC_OK)
            mil_blob_check_type(&f, &one, MIL_DT_UINT3, one.size_bytes * 8 / 3, "t", &err);
    }
    mil_blob_close(&f);
    return 0;
}
