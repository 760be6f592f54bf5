/* Streaming safetensors writer (see safetensors_write.h). The header is
 * padded with spaces to a multiple of 8 bytes so every tensor is aligned,
 * as the reference implementation does. */
#include "io/safetensors_write.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t st_write_tensor_bytes(const st_write_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n * st_dtype_size(t->dtype);
}

static char *build_header(const st_write_tensor *ts, int n, size_t *len) {
    json_t *root = json_object(), *meta = json_object();
    json_object_set_new(meta, "format", json_string("pt"));
    json_object_set_new(root, "__metadata__", meta);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        json_t *e = json_object(), *shape = json_array(), *offs = json_array();
        for (int d = 0; d < ts[i].ndim; d++)
            json_array_append_new(shape, json_integer(ts[i].shape[d]));
        size_t b = st_write_tensor_bytes(&ts[i]);
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_array_append_new(offs, json_integer((json_int_t)(off + b)));
        off += b;
        json_object_set_new(e, "dtype", json_string(st_dtype_name(ts[i].dtype)));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", offs);
        json_object_set_new(root, ts[i].name, e);
    }
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!s) return NULL;
    size_t l = strlen(s), padded = (l + 7) & ~(size_t)7;
    char *out = realloc(s, padded + 1);
    if (!out) {
        free(s);
        return NULL;
    }
    memset(out + l, ' ', padded - l);
    out[padded] = '\0';
    *len = padded;
    return out;
}

nc_status st_write_file(const char *path, const st_write_tensor *ts, int n, st_fill_fn fill,
                        void *ctx, nc_error *err) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    size_t hlen = 0;
    char *header = build_header(ts, n, &hlen);
    size_t buf_bytes = ST_WRITE_CHUNK_ELEMS * 8;
    void *buf = malloc(buf_bytes);
    FILE *f = header && buf ? fopen(tmp, "wb") : NULL;
    nc_status st = NC_OK;
    if (!header || !buf) {
        st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if (!f) {
        st = nc_fail(err, NC_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        goto done;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    if (fwrite(len8, 1, 8, f) != 8 || fwrite(header, 1, hlen, f) != hlen) goto write_error;
    for (int i = 0; i < n && st == NC_OK; i++) {
        size_t es = st_dtype_size(ts[i].dtype), total = st_write_tensor_bytes(&ts[i]) / es;
        for (size_t first = 0; first < total; first += ST_WRITE_CHUNK_ELEMS) {
            size_t cnt =
                total - first < ST_WRITE_CHUNK_ELEMS ? total - first : ST_WRITE_CHUNK_ELEMS;
            if ((st = fill(ctx, i, first, cnt, buf, err)) != NC_OK) break;
            if (fwrite(buf, es, cnt, f) != cnt) goto write_error;
        }
    }
    if (st != NC_OK) goto done;
    if (fclose(f) != 0) {
        f = NULL;
        goto write_error;
    }
    f = NULL;
    if (rename(tmp, path) != 0) {
        st = nc_fail(err, NC_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
        goto done;
    }
    goto done;
write_error:
    st = nc_fail(err, NC_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
done:
    if (f) fclose(f);
    if (st != NC_OK) remove(tmp);
    free(header);
    free(buf);
    return st;
}
