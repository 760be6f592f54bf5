/* mmap-based file access and small whole-file helpers. */
#include "base/mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"

/* Opens path for reading, checks it is a regular file and gives its size;
 * clears out. */
static nc_status open_regular(const char *path, nc_mapped_file *out, int *fd, size_t *size,
                              nc_error *err) {
    memset(out, 0, sizeof *out);
    *fd = open(path, O_RDONLY);
    if (*fd < 0) return nc_fail(err, NC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(*fd);
        return nc_fail(err, NC_ERR_IO, "%s: not a regular file", path);
    }
    *size = (size_t)st.st_size;
    return NC_OK;
}

nc_status nc_map_file(const char *path, nc_mapped_file *out, nc_error *err) {
    int fd;
    size_t size;
    NC_TRY(open_regular(path, out, &fd, &size, err));
    if (size > 0) {
        void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return nc_fail(err, NC_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
        }
        out->data = p;
        out->size_bytes = size;
    }
    close(fd);
    return NC_OK;
}

nc_status nc_load_file_resident(const char *path, size_t aligned_offset, int drop_page_cache,
                                nc_mapped_file *out, nc_error *err) {
    int fd;
    size_t size;
    NC_TRY(open_regular(path, out, &fd, &size, err));
    if (size == 0) {
        close(fd);
        return NC_OK;
    }
    size_t lead = (NC_ALIGN - aligned_offset % NC_ALIGN) % NC_ALIGN;
    nc_huge h;
    uint8_t *base = nc_huge_alloc(size + lead, &h);
    if (!base) {
        close(fd);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for %zu bytes", path, size);
    }
    size_t done = 0;
    const size_t chunk = (size_t)64 << 20;
#if defined(POSIX_FADV_WILLNEED)
    posix_fadvise(fd, 0, (off_t)(size < chunk ? size : chunk), POSIX_FADV_WILLNEED);
#endif
    while (done < size) {
        size_t want = size - done < chunk ? size - done : chunk;
#if defined(POSIX_FADV_WILLNEED)
        /* the disk reads the next chunk while this one is copied (a lone
         * pread of 64 MiB waits for its pages, then copies them) */
        if (done + want < size)
            posix_fadvise(fd, (off_t)(done + want), (off_t)chunk, POSIX_FADV_WILLNEED);
#endif
        ssize_t n = pread(fd, base + lead + done, want, (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const char *why = n < 0 ? strerror(errno) : "the file shrank while being read";
            nc_huge_free(&h);
            close(fd);
            return nc_fail(err, NC_ERR_IO, "%s: read failed: %s", path, why);
        }
#if defined(POSIX_FADV_DONTNEED)
        if (drop_page_cache) posix_fadvise(fd, (off_t)done, (off_t)n, POSIX_FADV_DONTNEED);
#else
        (void)drop_page_cache;
#endif
        done += (size_t)n;
    }
    close(fd);
    mprotect(h.region, h.region_bytes, PROT_READ);
    out->data = base + lead;
    out->size_bytes = size;
    out->region = h.region;
    out->region_bytes = h.region_bytes;
    return NC_OK;
}

int nc_mapped_set_writable(nc_mapped_file *m, int on) {
    if (!m->region) return 0;
    return mprotect(m->region, m->region_bytes, on ? PROT_READ | PROT_WRITE : PROT_READ) == 0;
}

void nc_unmap_file(nc_mapped_file *m) {
    if (m->region) munmap(m->region, m->region_bytes);
    else if (m->data) munmap((void *)m->data, m->size_bytes);
    m->region = NULL;
    m->region_bytes = 0;
    m->data = NULL;
    m->size_bytes = 0;
}

nc_status nc_read_file(const char *path, char **out, size_t *size_bytes, nc_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return nc_fail(err, NC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (len + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - 1 - len, f);
        len += n;
        if (n == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return nc_fail(err, NC_ERR_IO, "%s: read error", path);
    }
    buf[len] = '\0';
    *out = buf;
    if (size_bytes) *size_bytes = len;
    return NC_OK;
}

nc_status nc_write_file_atomic(const char *path, const void *data, size_t size_bytes,
                               nc_error *err) {
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n);
    if (!tmp) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        nc_status st = nc_fail(err, NC_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    int ok = fwrite(data, 1, size_bytes, f) == size_bytes;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        free(tmp);
        return nc_fail(err, NC_ERR_IO, "%s: write failed", path);
    }
    free(tmp);
    return NC_OK;
}

nc_status nc_copy_file(const char *src, const char *dst, nc_error *err) {
    char *data = NULL;
    size_t n = 0;
    NC_TRY(nc_read_file(src, &data, &n, err));
    nc_status st = nc_write_file_atomic(dst, data, n, err);
    free(data);
    return st;
}

int nc_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int nc_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
