/* SHA-256 from FIPS 180-4 §6.2, and hashing of files and folders. */
#include "bench/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 =
            hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

void nc_sha256_init(nc_sha256 *c) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->n_bytes = 0;
    c->used = 0;
}

void nc_sha256_update(nc_sha256 *c, const void *data, size_t len) {
    const unsigned char *p = data;
    c->n_bytes += len;
    while (len) {
        size_t k = 64 - c->used < len ? 64 - c->used : len;
        memcpy(c->block + c->used, p, k);
        c->used += k;
        p += k;
        len -= k;
        if (c->used == 64) {
            compress(c->h, c->block);
            c->used = 0;
        }
    }
}

void nc_sha256_final_hex(nc_sha256 *c, char hex[65]) {
    uint64_t bits = c->n_bytes * 8;
    unsigned char pad = 0x80, zero = 0, len_be[8];
    nc_sha256_update(c, &pad, 1);
    while (c->used != 56)
        nc_sha256_update(c, &zero, 1);
    for (int i = 0; i < 8; i++)
        len_be[i] = (unsigned char)(bits >> (56 - 8 * i));
    nc_sha256_update(c, len_be, 8);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 8 * i, 9, "%08x", c->h[i]);
}

void nc_sha256_hex(const void *data, size_t len, char hex[65]) {
    nc_sha256 c;
    nc_sha256_init(&c);
    nc_sha256_update(&c, data, len);
    nc_sha256_final_hex(&c, hex);
}

static nc_status hash_file(const char *path, char hex[65], nc_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return nc_fail(err, NC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    nc_sha256 c;
    nc_sha256_init(&c);
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        nc_sha256_update(&c, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return nc_fail(err, NC_ERR_IO, "%s: read error", path);
    nc_sha256_final_hex(&c, hex);
    return NC_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends every regular file under dir (relative to root_len) to *list. */
static nc_status list_files(const char *dir, size_t root_len, char ***list, size_t *n, size_t *cap,
                            int depth, nc_error *err) {
    if (depth > 16) return nc_fail(err, NC_ERR_RANGE, "%s: folders nested too deep", dir);
    DIR *d = opendir(dir);
    if (!d) return nc_fail(err, NC_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    struct dirent *e;
    nc_status st = NC_OK;
    while (st == NC_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(len);
        if (!p) {
            st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
            break;
        }
        snprintf(p, len, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            st = list_files(p, root_len, list, n, cap, depth + 1, err);
            free(p);
        } else if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (*n == *cap) {
                size_t c2 = *cap ? *cap * 2 : 64;
                char **l2 = realloc(*list, c2 * sizeof *l2);
                if (!l2) {
                    free(p);
                    st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
                    break;
                }
                *list = l2;
                *cap = c2;
            }
            (*list)[(*n)++] = p;
        } else {
            free(p);
        }
    }
    closedir(d);
    (void)root_len;
    return st;
}

nc_status nc_sha256_path(const char *path, char hex[65], nc_error *err) {
    struct stat sb;
    if (stat(path, &sb) != 0) return nc_fail(err, NC_ERR_IO, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return hash_file(path, hex, err);
    char **list = NULL;
    size_t n = 0, cap = 0;
    size_t root_len = strlen(path) + 1;
    nc_status st = list_files(path, root_len, &list, &n, &cap, 0, err);
    if (st == NC_OK) qsort(list, n, sizeof *list, cmp_str);
    nc_sha256 c;
    nc_sha256_init(&c);
    for (size_t i = 0; i < n && st == NC_OK; i++) {
        char fh[65];
        st = hash_file(list[i], fh, err);
        if (st != NC_OK) break;
        nc_sha256_update(&c, list[i] + root_len, strlen(list[i] + root_len));
        nc_sha256_update(&c, "\t", 1);
        nc_sha256_update(&c, fh, 64);
        nc_sha256_update(&c, "\n", 1);
    }
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
    if (st == NC_OK) nc_sha256_final_hex(&c, hex);
    return st;
}
