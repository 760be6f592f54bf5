/* Read-only memory-mapped files: model weights stay in the page cache and are
 * shared between processes; nothing is copied unless a kernel needs another
 * format. */
#ifndef NC_BASE_MMAP_H
#define NC_BASE_MMAP_H

#include <stddef.h>

#include "base/error.h"

typedef struct nc_mapped_file {
    const unsigned char *data; /* NULL for an empty file */
    size_t size_bytes;
    void *region; /* set when the file was read into memory, not mapped */
    size_t region_bytes;
} nc_mapped_file;

nc_status nc_map_file(const char *path, nc_mapped_file *out, nc_error *err);
void nc_unmap_file(nc_mapped_file *m);

/* Reads a whole file into private memory instead of mapping it (read-only
 * after): on huge pages where the system grants them (nc_huge_alloc), with
 * the file's byte at aligned_offset on a 64-byte boundary; drop_page_cache:
 * asks the kernel to drop the file's cached pages once read (so the file is
 * not held twice). Reads 64 MiB at a time, each after asking the kernel to
 * read the next one ahead (POSIX_FADV_WILLNEED), so the disk and the copy
 * overlap. Freed by nc_unmap_file. */
nc_status nc_load_file_resident(const char *path, size_t aligned_offset, int drop_page_cache,
                                nc_mapped_file *out, nc_error *err);

/* A file read into memory made writable (on) or read-only again (off), for
 * loaders that rearrange weights in place; returns 0 for a mapped file
 * (or an empty one), which stays read-only, and 1 otherwise. */
int nc_mapped_set_writable(nc_mapped_file *m, int on);

/* Reads a whole (small) file into a NUL-terminated heap buffer. */
nc_status nc_read_file(const char *path, char **out, size_t *size_bytes, nc_error *err);

/* Writes a file atomically: to PATH.tmp, then rename; on failure nothing is
 * left behind (no partial output files). */
nc_status nc_write_file_atomic(const char *path, const void *data, size_t size_bytes,
                               nc_error *err);

/* Copies a (small) file whole: nc_read_file, then nc_write_file_atomic. */
nc_status nc_copy_file(const char *src, const char *dst, nc_error *err);

int nc_file_exists(const char *path);
int nc_is_dir(const char *path);

#endif
