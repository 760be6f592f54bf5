/* mmap-based file access and small whole-file helpers. */
#include "base/mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

nc_status nc_map_file(const char *path, nc_mapped_file *out, nc_error *err) {
    out->data = NULL;
    out->size_bytes = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return nc_fail(err, NC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return nc_fail(err, NC_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return nc_fail(err, NC_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
        }
        out->data = p;
        out->size_bytes = (size_t)st.st_size;
    }
    close(fd);
    return NC_OK;
}

void nc_unmap_file(nc_mapped_file *m) {
    if (m->data) munmap((void *)m->data, m->size_bytes);
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
