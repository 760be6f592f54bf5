/* .npy reader and writer. The header is a Python dict literal; we accept the
 * exact shape numpy writes ('descr', 'fortran_order', 'shape' in any order)
 * and reject big-endian and Fortran-ordered arrays with a clear message. */
#include "io/npy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "base/mmap.h"

static const struct {
    const char *descr;
    size_t size;
} dtype_info[] = {
    [NC_NPY_BOOL] = {"|b1", 1}, [NC_NPY_I8] = {"|i1", 1},  [NC_NPY_U8] = {"|u1", 1},
    [NC_NPY_I16] = {"<i2", 2},  [NC_NPY_U16] = {"<u2", 2}, [NC_NPY_I32] = {"<i4", 4},
    [NC_NPY_U32] = {"<u4", 4},  [NC_NPY_I64] = {"<i8", 8}, [NC_NPY_U64] = {"<u8", 8},
    [NC_NPY_F16] = {"<f2", 2},  [NC_NPY_F32] = {"<f4", 4}, [NC_NPY_F64] = {"<f8", 8},
};
#define N_DTYPES (sizeof dtype_info / sizeof dtype_info[0])

size_t nc_npy_dtype_size(nc_npy_dtype t) { return dtype_info[t].size; }
const char *nc_npy_dtype_descr(nc_npy_dtype t) { return dtype_info[t].descr; }

static int descr_to_dtype(const char *d, size_t len, nc_npy_dtype *out) {
    for (size_t i = 0; i < N_DTYPES; i++) {
        const char *want = dtype_info[i].descr;
        /* '|i1' may also be written '<i1' or '=i1'; compare the type part. */
        if (len == 3 && strncmp(d + 1, want + 1, 2) == 0 &&
            (d[0] == want[0] || d[0] == '<' || d[0] == '|' || d[0] == '=')) {
            *out = (nc_npy_dtype)i;
            return 1;
        }
    }
    return 0;
}

/* Finds 'key' in the header dict and returns a pointer just after its colon. */
static const char *find_key(const char *h, size_t n, const char *key) {
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl + 2 <= n; i++) {
        if ((h[i] == '\'' || h[i] == '"') && strncmp(h + i + 1, key, kl) == 0 &&
            h[i + 1 + kl] == h[i]) {
            const char *p = h + i + kl + 2;
            while (p < h + n && (*p == ' ' || *p == ':')) p++;
            return p;
        }
    }
    return NULL;
}

nc_status nc_npy_parse(const void *buf, size_t len, const char *what, nc_npy *out,
                       nc_error *err) {
    memset(out, 0, sizeof *out);
    const unsigned char *b = buf;
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return nc_fail(err, NC_ERR_FORMAT, "%s: not a .npy file (bad magic)", what);
    int major = b[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)b[8] | ((size_t)b[9] << 8);
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return nc_fail(err, NC_ERR_FORMAT, "%s: truncated .npy header", what);
        hlen = (size_t)b[8] | ((size_t)b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24);
        hstart = 12;
    } else {
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: .npy version %d not supported", what, major);
    }
    if (hlen > len - hstart) return nc_fail(err, NC_ERR_FORMAT, "%s: truncated .npy header", what);
    const char *h = (const char *)b + hstart;

    const char *p = find_key(h, hlen, "descr");
    const char *end = h + hlen;
    if (!p || p >= end || (*p != '\'' && *p != '"'))
        return nc_fail(err, NC_ERR_FORMAT, "%s: .npy header lacks 'descr'", what);
    const char *q = memchr(p + 1, *p, (size_t)(end - p - 1));
    if (!q) return nc_fail(err, NC_ERR_FORMAT, "%s: .npy header: unterminated 'descr'", what);
    if (!descr_to_dtype(p + 1, (size_t)(q - p - 1), &out->dtype))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: .npy dtype '%.*s' not supported", what,
                       (int)(q - p - 1), p + 1);

    p = find_key(h, hlen, "fortran_order");
    if (!p) return nc_fail(err, NC_ERR_FORMAT, "%s: .npy header lacks 'fortran_order'", what);
    if ((size_t)(end - p) >= 4 && strncmp(p, "True", 4) == 0)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: Fortran-ordered .npy not supported", what);

    p = find_key(h, hlen, "shape");
    if (!p || p >= end || *p != '(')
        return nc_fail(err, NC_ERR_FORMAT, "%s: .npy header lacks 'shape'", what);
    p++;
    size_t count = 1;
    for (;;) {
        while (p < end && (*p == ' ' || *p == ',')) p++;
        if (p >= end) return nc_fail(err, NC_ERR_FORMAT, "%s: .npy shape unterminated", what);
        if (*p == ')') break;
        if (!isdigit((unsigned char)*p))
            return nc_fail(err, NC_ERR_FORMAT, "%s: .npy shape is not a tuple of integers", what);
        if (out->ndim == NC_NPY_MAX_DIMS)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: .npy has more than %d dims", what,
                           NC_NPY_MAX_DIMS);
        int64_t d = 0;
        while (p < end && isdigit((unsigned char)*p)) {
            d = d * 10 + (*p++ - '0');
            if (d > ((int64_t)1 << 40))
                return nc_fail(err, NC_ERR_RANGE, "%s: .npy dimension too large", what);
        }
        out->shape[out->ndim++] = d;
        if (d != 0 && count > ((size_t)1 << 40) / (size_t)d)
            return nc_fail(err, NC_ERR_RANGE, "%s: .npy array too large", what);
        count *= (size_t)d;
    }
    out->count = count;
    out->size_bytes = count * dtype_info[out->dtype].size;
    size_t data_off = hstart + hlen;
    if (len - data_off < out->size_bytes)
        return nc_fail(err, NC_ERR_FORMAT, "%s: .npy data truncated (%zu of %zu bytes)", what,
                       len - data_off, out->size_bytes);
    out->data = malloc(out->size_bytes ? out->size_bytes : 1);
    if (!out->data) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    memcpy(out->data, b + data_off, out->size_bytes);
    return NC_OK;
}

nc_status nc_npy_read(const char *path, nc_npy *out, nc_error *err) {
    nc_mapped_file m;
    memset(out, 0, sizeof *out);
    NC_TRY(nc_map_file(path, &m, err));
    nc_status st = nc_npy_parse(m.data ? m.data : (const unsigned char *)"", m.size_bytes, path,
                                out, err);
    nc_unmap_file(&m);
    return st;
}

nc_status nc_npy_write(const char *path, nc_npy_dtype dtype, int ndim, const int64_t *shape,
                       const void *data, nc_error *err) {
    if (ndim < 0 || ndim > NC_NPY_MAX_DIMS)
        return nc_fail(err, NC_ERR_INVALID, "%s: bad number of dims %d", path, ndim);
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     dtype_info[dtype].descr);
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)shape[i],
                      ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
        count *= (size_t)shape[i];
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total_h = 10 + (size_t)n + 1;
    size_t pad = (64 - total_h % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    size_t data_bytes = count * dtype_info[dtype].size;
    size_t file_bytes = 10 + hlen + data_bytes;
    unsigned char *buf = malloc(file_bytes);
    if (!buf) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hlen & 0xff);
    buf[9] = (unsigned char)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', pad);
    buf[10 + hlen - 1] = '\n';
    if (data_bytes) memcpy(buf + 10 + hlen, data, data_bytes);
    nc_status st = nc_write_file_atomic(path, buf, file_bytes, err);
    free(buf);
    return st;
}

void nc_npy_free(nc_npy *a) {
    free(a->data);
    a->data = NULL;
}

nc_status nc_npy_to_f32(const nc_npy *a, float **out, nc_error *err) {
    float *f = malloc((a->count ? a->count : 1) * sizeof *f);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "npy: out of memory");
    for (size_t i = 0; i < a->count; i++) {
        const unsigned char *p = (const unsigned char *)a->data + i * dtype_info[a->dtype].size;
        float v = 0;
        switch (a->dtype) {
        case NC_NPY_BOOL: v = *p != 0; break;
        case NC_NPY_I8: v = *(const int8_t *)p; break;
        case NC_NPY_U8: v = *p; break;
        case NC_NPY_I16: { int16_t x; memcpy(&x, p, 2); v = x; } break;
        case NC_NPY_U16: { uint16_t x; memcpy(&x, p, 2); v = x; } break;
        case NC_NPY_I32: { int32_t x; memcpy(&x, p, 4); v = (float)x; } break;
        case NC_NPY_U32: { uint32_t x; memcpy(&x, p, 4); v = (float)x; } break;
        case NC_NPY_I64: { int64_t x; memcpy(&x, p, 8); v = (float)x; } break;
        case NC_NPY_U64: { uint64_t x; memcpy(&x, p, 8); v = (float)x; } break;
        case NC_NPY_F16: { uint16_t x; memcpy(&x, p, 2); v = nc_fp16_to_f32(x); } break;
        case NC_NPY_F32: memcpy(&v, p, 4); break;
        case NC_NPY_F64: { double x; memcpy(&x, p, 8); v = (float)x; } break;
        }
        f[i] = v;
    }
    *out = f;
    return NC_OK;
}
