/* Program folders copied into the per-user cache for the ANE daemon
 * (ane_stage.h). */
#include "ane_host/ane_stage.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mmap.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

nc_status ane_stage_default_root(char *buf, size_t cap, nc_error *err) {
    const char *env = getenv("NECTAR_ANE_CACHE");
    if (env && *env) {
        if (strlen(env) >= cap) return nc_fail(err, NC_ERR_RANGE, "NECTAR_ANE_CACHE is too long");
        snprintf(buf, cap, "%s", env);
        return NC_OK;
    }
    char base[PATH_MAX] = "";
#if defined(__APPLE__)
    /* the per-user cache dir (/var/folders/.../C/), what splash uses */
    size_t n = confstr(_CS_DARWIN_USER_CACHE_DIR, base, sizeof base);
    if (n == 0 || n > sizeof base)
        return nc_fail(err, NC_ERR_IO, "macOS names no per-user cache directory (confstr)");
#else
    const char *dirs[3] = {getenv("XDG_CACHE_HOME"), getenv("TMPDIR"), "/tmp"};
    for (int i = 0; i < 3 && !base[0]; i++)
        if (dirs[i] && *dirs[i]) snprintf(base, sizeof base, "%s", dirs[i]);
#endif
    size_t len = strlen(base);
    if (len && base[len - 1] == '/') base[len - 1] = '\0';
    if (strlen(base) + sizeof "/nectar-ane" > cap)
        return nc_fail(err, NC_ERR_RANGE, "the cache directory path is too long");
    snprintf(buf, cap, "%s/nectar-ane", base);
    return NC_OK;
}

static nc_status hash_file(const char *path, int required, uint64_t *h, nc_error *err) {
    if (!required && !nc_file_exists(path)) return NC_OK;
    nc_mapped_file f;
    NC_TRY(nc_map_file(path, &f, err));
    for (size_t i = 0; i < f.size_bytes; i++)
        *h = (*h ^ f.data[i]) * 0x100000001b3ull;
    nc_unmap_file(&f);
    return NC_OK;
}

nc_status ane_stage_key(const char *dir, char key[ANE_STAGE_KEY_MAX], nc_error *err) {
    char path[PATH_MAX + 32];
    uint64_t h = 0xcbf29ce484222325ull;
    snprintf(path, sizeof path, "%s/model.mil", dir);
    NC_TRY(hash_file(path, 1, &h, err));
    snprintf(path, sizeof path, "%s/weights/weight.bin", dir);
    NC_TRY(hash_file(path, 0, &h, err));
    snprintf(key, ANE_STAGE_KEY_MAX, "nectar-%016llx", (unsigned long long)h);
    return NC_OK;
}

static nc_status make_dir(const char *path, nc_error *err) {
    if (mkdir(path, 0700) == 0 || (errno == EEXIST && nc_is_dir(path))) return NC_OK;
    return nc_fail(err, NC_ERR_IO, "%s: cannot create the directory: %s", path, strerror(errno));
}

nc_status ane_make_dirs(const char *path, nc_error *err) {
    char tmp[PATH_MAX];
    if (strlen(path) >= sizeof tmp) return nc_fail(err, NC_ERR_RANGE, "%s: path too long", path);
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        nc_status st = nc_is_dir(tmp) ? NC_OK : make_dir(tmp, err);
        *p = '/';
        NC_TRY(st);
    }
    return make_dir(tmp, err);
}

nc_status ane_stage_program(const char *root, const char *dir, char *out, size_t cap,
                            char key[ANE_STAGE_KEY_MAX], nc_error *err) {
    NC_TRY(ane_stage_key(dir, key, err));
    char dst[PATH_MAX], src[PATH_MAX], to[PATH_MAX + 64];
    if (snprintf(dst, sizeof dst, "%s/%s", root, key) >= (int)sizeof dst ||
        strlen(dir) + 32 > sizeof src)
        return nc_fail(err, NC_ERR_RANGE, "%s: path too long", dir);
    snprintf(to, sizeof to, "%s/complete", dst);
    if (!nc_file_exists(to)) {
        NC_TRY(ane_make_dirs(dst, err));
        snprintf(src, sizeof src, "%s/model.mil", dir);
        snprintf(to, sizeof to, "%s/model.mil", dst);
        NC_TRY(nc_copy_file(src, to, err));
        snprintf(src, sizeof src, "%s/weights/weight.bin", dir);
        if (nc_file_exists(src)) {
            snprintf(to, sizeof to, "%s/weights", dst);
            NC_TRY(make_dir(to, err));
            snprintf(to, sizeof to, "%s/weights/weight.bin", dst);
            NC_TRY(nc_copy_file(src, to, err));
        }
        /* last: a later run trusts a folder only once this exists */
        snprintf(to, sizeof to, "%s/complete", dst);
        NC_TRY(nc_write_file_atomic(to, key, strlen(key), err));
    }
    char real[PATH_MAX];
    if (!realpath(dst, real))
        return nc_fail(err, NC_ERR_IO, "%s: cannot resolve the path: %s", dst, strerror(errno));
    if (strlen(real) >= cap) return nc_fail(err, NC_ERR_RANGE, "%s: path too long", real);
    snprintf(out, cap, "%s", real);
    return NC_OK;
}
