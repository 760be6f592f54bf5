/* SHA-256 (FIPS 180-4) for recording which workload and which model files a
 * measurement used; a file or a whole folder can be hashed. */
#ifndef NC_BENCH_SHA256_H
#define NC_BENCH_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct nc_sha256 {
    uint32_t h[8];
    uint64_t n_bytes;
    unsigned char block[64];
    size_t used;
} nc_sha256;

void nc_sha256_init(nc_sha256 *c);
void nc_sha256_update(nc_sha256 *c, const void *data, size_t len);
/* Writes 64 lowercase hex digits and a NUL into hex[65]. */
void nc_sha256_final_hex(nc_sha256 *c, char hex[65]);
void nc_sha256_hex(const void *data, size_t len, char hex[65]);

/* A regular file: the SHA-256 of its bytes. A folder: the SHA-256 of the
 * lines "<relative path>\t<file sha256>\n" over its regular files, recursively,
 * sorted by path (so renaming or changing any file changes the hash). */
nc_status nc_sha256_path(const char *path, char hex[65], nc_error *err);

#endif
