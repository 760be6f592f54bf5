/* weight.bin: MIL blob storage v2, the file that holds a MIL program's large
 * constants. A 64-byte header (count, version 2) is followed by blobs, each a
 * 64-byte metadata record at a 64-byte-aligned offset (sentinel 0xDEADBEEF,
 * dtype code, size, absolute data offset, padding bits) and its payload.
 * BLOBFILE(offset = N) in MIL names the metadata record at N. Layout as in
 * coremltools' MILBlob StorageWriter; see docs/mil.md. */
#ifndef NC_MIL_MIL_BLOB_H
#define NC_MIL_MIL_BLOB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "base/mmap.h"
#include "mil/dtype.h"

#define MIL_BLOB_HEADER_BYTES 64
#define MIL_BLOB_RECORD_BYTES 64
#define MIL_BLOB_ALIGN 64
#define MIL_BLOB_SENTINEL 0xDEADBEEFu
#define MIL_BLOB_VERSION 2

/* A blob file opened for reading (mapped, or a caller's buffer). */
typedef struct mil_blob_file {
    const uint8_t *data;
    size_t size_bytes;
    uint32_t count;     /* blobs the header declares */
    const char *what;   /* path or label for messages (owned copy) */
    nc_mapped_file map; /* set when opened from a path */
} mil_blob_file;

/* One blob, validated: sentinel, dtype code, payload inside the file. */
typedef struct mil_blob_entry {
    uint64_t record_offset; /* what BLOBFILE(offset = ...) holds */
    uint32_t dtype_code;    /* BlobDataType code */
    mil_dtype dtype;
    uint64_t size_bytes;   /* payload bytes */
    uint64_t data_offset;  /* absolute offset of the payload */
    uint64_t padding_bits; /* unused bits in the last byte (sub-byte dtypes) */
    const uint8_t *data;   /* points into the file */
} mil_blob_entry;

/* Maps a file and validates its header (size, version 2). */
nc_status mil_blob_open(const char *path, mil_blob_file *out, nc_error *err);
/* Validates a header in memory (not copied; must outlive the handle). */
nc_status mil_blob_open_memory(const uint8_t *data, size_t size_bytes, const char *what,
                               mil_blob_file *out, nc_error *err);
void mil_blob_close(mil_blob_file *f);

/* Reads and validates the record at `offset` (alignment, bounds, sentinel,
 * known dtype code, payload bounds, padding < 8 and only for sub-byte types). */
nc_status mil_blob_entry_at(const mil_blob_file *f, uint64_t offset, mil_blob_entry *out,
                            nc_error *err);
/* Checks a blob against the tensor type MIL declares for it: dtype and byte
 * size of `numel` elements (sub-byte: ceil(numel*bits/8) with matching
 * padding). `what` names the referring tensor in messages. */
nc_status mil_blob_check_type(const mil_blob_file *f, const mil_blob_entry *e, mil_dtype dt,
                              uint64_t numel, const char *what, nc_error *err);
/* Walks all `count` records from offset 64 (each next record at
 * align64(data_offset + size)); *out is malloc'd, free() it. */
nc_status mil_blob_list(const mil_blob_file *f, mil_blob_entry **out, size_t *n, nc_error *err);

/* Bytes needed for n elements of dt in a blob; unused bits in *padding_bits. */
uint64_t mil_blob_payload_bytes(mil_dtype dt, uint64_t n, uint64_t *padding_bits);

/* Writer: streams to PATH.tmp and renames to PATH on finish, so a failed
 * write leaves no partial file. */
typedef struct mil_blob_writer {
    FILE *f;
    char *path, *tmp_path;
    uint64_t size_bytes; /* bytes written so far (end of the last payload) */
    uint32_t count;
    int failed;
} mil_blob_writer;

nc_status mil_blob_writer_open(mil_blob_writer *w, const char *path, nc_error *err);
/* Appends one blob of n elements of dt; `bytes` holds the payload as stored
 * (mil_blob_payload_bytes(dt, n) bytes; sub-byte types already packed).
 * *record_offset receives the BLOBFILE offset. */
nc_status mil_blob_writer_add(mil_blob_writer *w, mil_dtype dt, uint64_t n, const void *bytes,
                              uint64_t *record_offset, nc_error *err);
/* Writes the final header and renames into place; the writer is released. */
nc_status mil_blob_writer_finish(mil_blob_writer *w, nc_error *err);
/* Discards the temporary file; safe after finish or on a zeroed writer. */
void mil_blob_writer_abort(mil_blob_writer *w);

/* Sub-byte packing, LSB first: element i occupies bits [i*bits, (i+1)*bits)
 * of the byte stream (values may straddle bytes). `vals` holds one element
 * per byte (two's complement low bits for int4). out must hold
 * ceil(n*bits/8) bytes. */
void mil_pack_sub_byte(const uint8_t *vals, size_t n, int bits, uint8_t *out);
/* Element i of a packed stream, zero-extended (sign-extend int4 yourself). */
unsigned mil_unpack_sub_byte(const uint8_t *packed, size_t i, int bits);

#endif
