/* weight.bin reader and writer (MIL blob storage v2, see mil_blob.h). The
 * reader trusts nothing: every offset and size is checked against the file
 * before use, so a corrupt or hostile file gives a one-line error. */
#include "mil/mil_blob.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) {
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}
static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t align64(uint64_t x) {
    return (x + MIL_BLOB_ALIGN - 1) & ~(uint64_t)(MIL_BLOB_ALIGN - 1);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

nc_status mil_blob_open_memory(const uint8_t *data, size_t size_bytes, const char *what,
                               mil_blob_file *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    if (size_bytes < MIL_BLOB_HEADER_BYTES)
        return nc_fail(err, NC_ERR_FORMAT, "%s: %zu bytes is too short for a blob file header (64)",
                       what, size_bytes);
    uint32_t version = rd32(data + 4);
    if (version != MIL_BLOB_VERSION)
        return nc_fail(err, NC_ERR_FORMAT, "%s: blob storage version %u, expected 2", what,
                       version);
    out->what = dup_str(what);
    if (!out->what) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    out->data = data;
    out->size_bytes = size_bytes;
    out->count = rd32(data);
    return NC_OK;
}

nc_status mil_blob_open(const char *path, mil_blob_file *out, nc_error *err) {
    nc_mapped_file map;
    memset(out, 0, sizeof *out);
    NC_TRY(nc_map_file(path, &map, err));
    nc_status st = mil_blob_open_memory(map.data, map.size_bytes, path, out, err);
    if (st != NC_OK) {
        nc_unmap_file(&map);
        return st;
    }
    out->map = map;
    return NC_OK;
}

void mil_blob_close(mil_blob_file *f) {
    if (f->map.data) nc_unmap_file(&f->map);
    free((char *)f->what);
    memset(f, 0, sizeof *f);
}

uint64_t mil_blob_payload_bytes(mil_dtype dt, uint64_t n, uint64_t *padding_bits) {
    uint64_t bits = (uint64_t)mil_dtype_bits(dt);
    if (padding_bits) *padding_bits = 0;
    if (bits == 0) return 0;
    if (bits >= 8) return n * (bits / 8);
    uint64_t total = n * bits, bytes = (total + 7) / 8;
    if (padding_bits) *padding_bits = bytes * 8 - total;
    return bytes;
}

nc_status mil_blob_entry_at(const mil_blob_file *f, uint64_t offset, mil_blob_entry *out,
                            nc_error *err) {
    const char *what = f->what ? f->what : "weight.bin";
    memset(out, 0, sizeof *out);
    if (offset % MIL_BLOB_ALIGN)
        return nc_fail(err, NC_ERR_FORMAT, "%s: blob offset %" PRIu64 " is not 64-byte aligned",
                       what, offset);
    if (offset < MIL_BLOB_HEADER_BYTES || offset > f->size_bytes ||
        f->size_bytes - offset < MIL_BLOB_RECORD_BYTES)
        return nc_fail(err, NC_ERR_RANGE,
                       "%s: blob offset %" PRIu64 " is outside the file (%zu bytes)", what, offset,
                       f->size_bytes);
    const uint8_t *r = f->data + offset;
    uint32_t sentinel = rd32(r);
    if (sentinel != MIL_BLOB_SENTINEL)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: blob at offset %" PRIu64 ": bad sentinel 0x%08X (expected 0xDEADBEEF)",
                       what, offset, sentinel);
    out->record_offset = offset;
    out->dtype_code = rd32(r + 4);
    out->size_bytes = rd64(r + 8);
    out->data_offset = rd64(r + 16);
    out->padding_bits = rd64(r + 24);
    out->dtype = mil_dtype_from_blob_code(out->dtype_code);
    if (out->dtype == MIL_DT_INVALID)
        return nc_fail(err, NC_ERR_FORMAT, "%s: blob at offset %" PRIu64 ": unknown dtype code %u",
                       what, offset, out->dtype_code);
    if (out->data_offset < offset + MIL_BLOB_RECORD_BYTES || out->data_offset > f->size_bytes ||
        f->size_bytes - out->data_offset < out->size_bytes)
        return nc_fail(err, NC_ERR_RANGE,
                       "%s: blob at offset %" PRIu64 ": data [%" PRIu64 ", +%" PRIu64
                       ") is outside the file (%zu bytes)",
                       what, offset, out->data_offset, out->size_bytes, f->size_bytes);
    int bits = mil_dtype_bits(out->dtype);
    if (out->padding_bits >= 8 || (bits >= 8 && out->padding_bits != 0) ||
        out->padding_bits > out->size_bytes * 8)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: blob at offset %" PRIu64 ": padding of %" PRIu64
                       " bits is invalid for %s",
                       what, offset, out->padding_bits, mil_dtype_name(out->dtype));
    if (bits >= 8 && out->size_bytes % (uint64_t)(bits / 8))
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: blob at offset %" PRIu64 ": %" PRIu64
                       " bytes is not a whole number of %s",
                       what, offset, out->size_bytes, mil_dtype_name(out->dtype));
    out->data = f->data + out->data_offset;
    return NC_OK;
}

nc_status mil_blob_check_type(const mil_blob_file *f, const mil_blob_entry *e, mil_dtype dt,
                              uint64_t numel, const char *what, nc_error *err) {
    const char *file = f && f->what ? f->what : "weight.bin";
    if (e->dtype != dt)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: %s: blob at offset %" PRIu64 " holds %s, MIL declares %s", file, what,
                       e->record_offset, mil_dtype_name(e->dtype), mil_dtype_name(dt));
    uint64_t pad;
    int bits = mil_dtype_bits(dt);
    if (bits > 0 && numel > UINT64_MAX / (uint64_t)bits)
        return nc_fail(err, NC_ERR_RANGE, "%s: %s: element count %" PRIu64 " is too large", file,
                       what, numel);
    uint64_t want = mil_blob_payload_bytes(dt, numel, &pad);
    if (e->size_bytes != want || (mil_dtype_is_sub_byte(dt) && e->padding_bits != pad))
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: %s: blob at offset %" PRIu64 " has %" PRIu64 " bytes (padding %" PRIu64
                       " bits), %" PRIu64 " x %s needs %" PRIu64 " (padding %" PRIu64 ")",
                       file, what, e->record_offset, e->size_bytes, e->padding_bits, numel,
                       mil_dtype_name(dt), want, pad);
    return NC_OK;
}

nc_status mil_blob_list(const mil_blob_file *f, mil_blob_entry **out, size_t *n, nc_error *err) {
    *out = NULL;
    *n = 0;
    /* Each blob takes at least 64 bytes of record, so count is bounded by the size. */
    if ((uint64_t)f->count > f->size_bytes / MIL_BLOB_RECORD_BYTES)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: header declares %u blobs, more than fit in %zu bytes", f->what,
                       f->count, f->size_bytes);
    mil_blob_entry *v = calloc(f->count ? f->count : 1, sizeof *v);
    if (!v) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", f->what);
    uint64_t off = MIL_BLOB_HEADER_BYTES;
    for (uint32_t i = 0; i < f->count; i++) {
        nc_status st = mil_blob_entry_at(f, off, &v[i], err);
        if (st != NC_OK) {
            free(v);
            nc_fail_prefix(err, "blob %u of %u", i + 1, f->count);
            return st;
        }
        off = align64(v[i].data_offset + v[i].size_bytes);
    }
    *out = v;
    *n = f->count;
    return NC_OK;
}

/* --- writer -------------------------------------------------------------- */

static nc_status write_at(mil_blob_writer *w, uint64_t pos, const void *p, size_t n,
                          nc_error *err) {
    if (fseeko(w->f, (off_t)pos, SEEK_SET) != 0 || (n && fwrite(p, 1, n, w->f) != n)) {
        w->failed = 1;
        return nc_fail(err, NC_ERR_IO, "%s: write failed: %s", w->tmp_path, strerror(errno));
    }
    return NC_OK;
}

static nc_status write_header(mil_blob_writer *w, nc_error *err) {
    uint8_t h[MIL_BLOB_HEADER_BYTES] = {0};
    wr32(h, w->count);
    wr32(h + 4, MIL_BLOB_VERSION);
    return write_at(w, 0, h, sizeof h, err);
}

nc_status mil_blob_writer_open(mil_blob_writer *w, const char *path, nc_error *err) {
    memset(w, 0, sizeof *w);
    size_t n = strlen(path) + 5;
    w->path = dup_str(path);
    w->tmp_path = malloc(n);
    if (!w->path || !w->tmp_path) {
        mil_blob_writer_abort(w);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(w->tmp_path, n, "%s.tmp", path);
    w->f = fopen(w->tmp_path, "w+b");
    if (!w->f) {
        nc_status st =
            nc_fail(err, NC_ERR_IO, "%s: cannot create: %s", w->tmp_path, strerror(errno));
        mil_blob_writer_abort(w);
        return st;
    }
    w->size_bytes = MIL_BLOB_HEADER_BYTES;
    nc_status st = write_header(w, err);
    if (st != NC_OK) mil_blob_writer_abort(w);
    return st;
}

nc_status mil_blob_writer_add(mil_blob_writer *w, mil_dtype dt, uint64_t n, const void *bytes,
                              uint64_t *record_offset, nc_error *err) {
    if (!w->f || w->failed) return nc_fail(err, NC_ERR_INVALID, "blob writer is not open");
    uint32_t code = mil_dtype_blob_code(dt);
    if (!code)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: dtype %s cannot be stored in a blob file",
                       w->path, mil_dtype_name(dt));
    uint64_t pad, size = mil_blob_payload_bytes(dt, n, &pad);
    uint64_t rec = align64(w->size_bytes), data = rec + MIL_BLOB_RECORD_BYTES;
    uint8_t r[MIL_BLOB_RECORD_BYTES] = {0};
    wr32(r, MIL_BLOB_SENTINEL);
    wr32(r + 4, code);
    wr64(r + 8, size);
    wr64(r + 16, data);
    wr64(r + 24, pad);
    /* The gap between the previous payload and this record is zeros: write
     * them explicitly rather than rely on seeking past the end. */
    static const uint8_t zeros[MIL_BLOB_ALIGN];
    NC_TRY(write_at(w, w->size_bytes, zeros, (size_t)(rec - w->size_bytes), err));
    NC_TRY(write_at(w, rec, r, sizeof r, err));
    NC_TRY(write_at(w, data, bytes, (size_t)size, err));
    w->size_bytes = data + size;
    w->count++;
    if (record_offset) *record_offset = rec;
    return NC_OK;
}

nc_status mil_blob_writer_finish(mil_blob_writer *w, nc_error *err) {
    if (!w->f || w->failed) {
        mil_blob_writer_abort(w);
        return nc_fail(err, NC_ERR_INVALID, "blob writer is not open");
    }
    nc_status st = write_header(w, err);
    if (st == NC_OK && fflush(w->f) != 0)
        st = nc_fail(err, NC_ERR_IO, "%s: write failed: %s", w->tmp_path, strerror(errno));
    int rc = fclose(w->f);
    w->f = NULL;
    if (st == NC_OK && rc != 0)
        st = nc_fail(err, NC_ERR_IO, "%s: close failed: %s", w->tmp_path, strerror(errno));
    if (st == NC_OK && rename(w->tmp_path, w->path) != 0)
        st = nc_fail(err, NC_ERR_IO, "%s: cannot rename into place: %s", w->path, strerror(errno));
    if (st != NC_OK) {
        mil_blob_writer_abort(w);
        return st;
    }
    free(w->path);
    free(w->tmp_path);
    memset(w, 0, sizeof *w);
    return NC_OK;
}

void mil_blob_writer_abort(mil_blob_writer *w) {
    if (w->f) fclose(w->f);
    if (w->tmp_path) remove(w->tmp_path);
    free(w->path);
    free(w->tmp_path);
    memset(w, 0, sizeof *w);
}

/* --- sub-byte packing ---------------------------------------------------- */

void mil_pack_sub_byte(const uint8_t *vals, size_t n, int bits, uint8_t *out) {
    size_t bytes = (n * (size_t)bits + 7) / 8;
    memset(out, 0, bytes);
    unsigned mask = (1u << bits) - 1;
    for (size_t i = 0; i < n; i++) {
        size_t bit = i * (size_t)bits;
        unsigned v = (vals[i] & mask) << (bit % 8);
        out[bit / 8] |= (uint8_t)v;
        if ((bit % 8) + (size_t)bits > 8) out[bit / 8 + 1] |= (uint8_t)(v >> 8);
    }
}

unsigned mil_unpack_sub_byte(const uint8_t *packed, size_t i, int bits) {
    size_t bit = i * (size_t)bits;
    unsigned v = packed[bit / 8] >> (bit % 8);
    if ((bit % 8) + (size_t)bits > 8) v |= (unsigned)packed[bit / 8 + 1] << (8 - bit % 8);
    return v & ((1u << bits) - 1);
}
