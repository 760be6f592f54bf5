/* safetensors reader: validation first, then pointers into the mmap.
 * Every check names the file and, where one is involved, the tensor, so a
 * damaged download is diagnosed in one line. */
#include "io/safetensors.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"

static const struct {
    const char *name;
    size_t size;
} dtype_table[ST_N_DTYPES] = {
    [ST_F32] = {"F32", 4},   [ST_F16] = {"F16", 2},         [ST_BF16] = {"BF16", 2},
    [ST_F64] = {"F64", 8},   [ST_I8] = {"I8", 1},           [ST_U8] = {"U8", 1},
    [ST_I16] = {"I16", 2},   [ST_U16] = {"U16", 2},         [ST_I32] = {"I32", 4},
    [ST_U32] = {"U32", 4},   [ST_I64] = {"I64", 8},         [ST_U64] = {"U64", 8},
    [ST_BOOL] = {"BOOL", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1},
};

const char *st_dtype_name(st_dtype t) {
    return (unsigned)t < ST_N_DTYPES ? dtype_table[t].name : "?";
}
size_t st_dtype_size(st_dtype t) {
    return (unsigned)t < ST_N_DTYPES ? dtype_table[t].size : 0;
}

static int dtype_from_name(const char *s, st_dtype *out) {
    for (int i = 0; i < ST_N_DTYPES; i++)
        if (!strcmp(s, dtype_table[i].name)) {
            *out = (st_dtype)i;
            return 1;
        }
    return 0;
}

void st_tensors_free(st_tensor *t, int n) {
    if (!t) return;
    for (int i = 0; i < n; i++)
        free(t[i].name);
    free(t);
}

/* A JSON integer in [0, 2^62] (keeps every later product checkable). */
static int get_size(const json_t *v, uint64_t *out) {
    if (!json_is_integer(v)) return 0;
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x > ((uint64_t)1 << 62)) return 0;
    *out = (uint64_t)x;
    return 1;
}

static nc_status parse_entry(const char *what, const char *name, const json_t *v, size_t data_size,
                             st_tensor *t, nc_error *err) {
    if (!json_is_object(v))
        return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': header entry is not an object", what,
                       name);
    const json_t *jd = json_object_get(v, "dtype");
    if (!json_is_string(jd))
        return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': missing or non-string 'dtype'", what,
                       name);
    if (!dtype_from_name(json_string_value(jd), &t->dtype))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: tensor '%s': unknown dtype '%.32s'", what,
                       name, json_string_value(jd));
    const json_t *js = json_object_get(v, "shape");
    if (!json_is_array(js) || json_array_size(js) > ST_MAX_DIMS)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: tensor '%s': 'shape' must be an array of at most %d sizes", what, name,
                       ST_MAX_DIMS);
    t->ndim = (int)json_array_size(js);
    uint64_t n_elems = 1;
    for (int d = 0; d < t->ndim; d++) {
        uint64_t dim;
        if (!get_size(json_array_get(js, (size_t)d), &dim))
            return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a valid size",
                           what, name, d);
        t->shape[d] = (int64_t)dim;
        if (dim && n_elems > (((uint64_t)1 << 62) / dim))
            return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': shape too large", what, name);
        n_elems *= dim;
    }
    const json_t *jo = json_object_get(v, "data_offsets");
    uint64_t begin, end;
    if (!json_is_array(jo) || json_array_size(jo) != 2 ||
        !get_size(json_array_get(jo, 0), &begin) || !get_size(json_array_get(jo, 1), &end))
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: tensor '%s': 'data_offsets' must be [begin, end] byte offsets", what,
                       name);
    if (end < begin)
        return nc_fail(err, NC_ERR_FORMAT, "%s: tensor '%s': data_offsets end %llu < begin %llu",
                       what, name, (unsigned long long)end, (unsigned long long)begin);
    uint64_t want = n_elems * dtype_table[t->dtype].size; /* n_elems <= 2^62 / dim, size <= 8 */
    if (n_elems > ((uint64_t)1 << 59) || end - begin != want)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: tensor '%s': shape x %s size is %llu bytes but data_offsets span %llu",
                       what, name, dtype_table[t->dtype].name, (unsigned long long)want,
                       (unsigned long long)(end - begin));
    if (end > data_size)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets end %llu is past the data block (%zu bytes; "
                       "file truncated?)",
                       what, name, (unsigned long long)end, data_size);
    t->n_elems = (size_t)n_elems;
    t->offset_bytes = (size_t)begin;
    t->size_bytes = (size_t)(end - begin);
    return NC_OK;
}

static int cmp_offset(const void *a, const void *b) {
    const st_tensor *x = a, *y = b;
    if (x->offset_bytes != y->offset_bytes) return x->offset_bytes < y->offset_bytes ? -1 : 1;
    return x->size_bytes < y->size_bytes ? -1 : x->size_bytes > y->size_bytes;
}
static int cmp_name(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

nc_status st_parse(const uint8_t *buf, size_t size, const char *what, st_tensor **out, int *n_out,
                   nc_error *err) {
    *out = NULL;
    *n_out = 0;
    if (size < 8)
        return nc_fail(err, NC_ERR_FORMAT, "%s: too short for a safetensors file (%zu bytes)", what,
                       size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | buf[i];
    if (hlen < 2 || hlen > ST_MAX_HEADER_BYTES)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: header length %llu is outside [2, %u] (not a safetensors file?)", what,
                       (unsigned long long)hlen, ST_MAX_HEADER_BYTES);
    if (hlen > size - 8)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: header length %llu exceeds the file size %zu (file truncated?)", what,
                       (unsigned long long)hlen, size);
    if (buf[8] != '{')
        return nc_fail(err, NC_ERR_FORMAT, "%s: header does not start with '{'", what);
    size_t data_size = size - 8 - (size_t)hlen;
    const uint8_t *data = buf + 8 + hlen;

    char label[300];
    snprintf(label, sizeof label, "%s: header", what);
    json_t *root;
    NC_TRY(nc_json_parse((const char *)buf + 8, (size_t)hlen, label, &root, err));
    if (!json_is_object(root)) {
        json_decref(root);
        return nc_fail(err, NC_ERR_FORMAT, "%s: header is not a JSON object", what);
    }
    size_t cap = json_object_size(root);
    st_tensor *ts = calloc(cap ? cap : 1, sizeof *ts);
    if (!ts) {
        json_decref(root);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    }
    int n = 0;
    nc_status st = NC_OK;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (!strcmp(key, "__metadata__")) continue;
        st_tensor *t = &ts[n];
        st = parse_entry(what, key, val, data_size, t, err);
        if (st != NC_OK) break;
        t->name = strdup(key);
        if (!t->name) {
            st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
            break;
        }
        t->data = data + t->offset_bytes;
        n++;
    }
    json_decref(root);
    if (st != NC_OK) {
        st_tensors_free(ts, n);
        return st;
    }
    /* No two tensors may share bytes (zero-size tensors own nothing). */
    qsort(ts, (size_t)n, sizeof *ts, cmp_offset);
    size_t prev_end = 0;
    const char *prev_name = NULL;
    for (int i = 0; i < n; i++) {
        if (ts[i].size_bytes == 0) continue;
        if (prev_name && ts[i].offset_bytes < prev_end) {
            nc_fail(err, NC_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap in the data block", what,
                    prev_name, ts[i].name);
            st_tensors_free(ts, n);
            return NC_ERR_FORMAT;
        }
        prev_end = ts[i].offset_bytes + ts[i].size_bytes;
        prev_name = ts[i].name;
    }
    qsort(ts, (size_t)n, sizeof *ts, cmp_name);
    *out = ts;
    *n_out = n;
    return NC_OK;
}

nc_status st_open(const char *path, st_file **out, nc_error *err) {
    *out = NULL;
    st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    }
    nc_status st = nc_map_file(path, &f->map, err);
    if (st == NC_OK)
        st = st_parse(f->map.data, f->map.size_bytes, path, &f->tensors, &f->n_tensors, err);
    if (st != NC_OK) {
        st_close(f);
        return st;
    }
    *out = f;
    return NC_OK;
}

nc_status st_make_resident(st_file *f, int drop_page_cache, nc_error *err) {
    if (f->map.region || f->map.size_bytes < 8) return NC_OK;
    const uint8_t *old = f->map.data;
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; i--)
        header_bytes = header_bytes << 8 | old[i];
    nc_mapped_file mem;
    NC_TRY(nc_load_file_resident(f->path, (size_t)(8 + header_bytes), drop_page_cache, &mem, err));
    if (mem.size_bytes != f->map.size_bytes) {
        nc_unmap_file(&mem);
        return nc_fail(err, NC_ERR_IO, "%s: the file changed size while being loaded", f->path);
    }
    for (int i = 0; i < f->n_tensors; i++)
        f->tensors[i].data = mem.data + ((const uint8_t *)f->tensors[i].data - old);
    nc_unmap_file(&f->map);
    f->map = mem;
    return NC_OK;
}

void st_close(st_file *f) {
    if (!f) return;
    st_tensors_free(f->tensors, f->n_tensors);
    nc_unmap_file(&f->map);
    free(f->path);
    free(f);
}

const st_tensor *st_find(const st_file *f, const char *name) {
    st_tensor key;
    key.name = (char *)name;
    return bsearch(&key, f->tensors, (size_t)f->n_tensors, sizeof key, cmp_name);
}
