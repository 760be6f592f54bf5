/* Opened weight files of a program (see blob_cache.h): a short list keyed by
 * resolved path, since a program refers to one or two files. */
#include "mil/blob_cache.h"

#include <stdlib.h>
#include <string.h>

struct mil_blob_cache {
    int n, cap;
    char **paths;
    mil_blob_file *files;
};

mil_blob_cache *mil_blob_cache_new(void) {
    return calloc(1, sizeof(mil_blob_cache));
}

void mil_blob_cache_free(mil_blob_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        mil_blob_close(&c->files[i]);
        free(c->paths[i]);
    }
    free(c->paths);
    free(c->files);
    free(c);
}

nc_status mil_blob_resolve_path(const mil_program *prog, const char *blob_path, char *buf,
                                size_t size, nc_error *err) {
    static const char prefix[] = "@model_path";
    const char *rest = blob_path;
    int n;
    if (!strncmp(blob_path, prefix, sizeof prefix - 1)) {
        rest = blob_path + sizeof prefix - 1;
        while (*rest == '/')
            rest++;
    } else if (blob_path[0] == '/') {
        n = snprintf(buf, size, "%s", blob_path);
        goto done;
    }
    if (!prog->model_dir)
        return nc_fail(err, NC_ERR_NOT_FOUND,
                       "%s: BLOBFILE path '%s' needs a model folder to resolve against",
                       prog->source ? prog->source : "program", blob_path);
    n = snprintf(buf, size, "%s/%s", prog->model_dir, rest);
done:
    if (n < 0 || (size_t)n >= size)
        return nc_fail(err, NC_ERR_RANGE, "BLOBFILE path '%s' is too long", blob_path);
    return NC_OK;
}

nc_status mil_blob_cache_get(const mil_program *prog, const char *blob_path,
                             const mil_blob_file **out, nc_error *err) {
    char path[4096];
    mil_blob_cache *c = prog->blobs;
    NC_TRY(mil_blob_resolve_path(prog, blob_path, path, sizeof path, err));
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->paths[i], path)) {
            *out = &c->files[i];
            return NC_OK;
        }
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 4;
        char **p = realloc(c->paths, (size_t)cap * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
        c->paths = p;
        mil_blob_file *f = realloc(c->files, (size_t)cap * sizeof *f);
        if (!f) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
        c->files = f;
        c->cap = cap;
    }
    NC_TRY(mil_blob_open(path, &c->files[c->n], err));
    c->paths[c->n] = malloc(strlen(path) + 1);
    if (!c->paths[c->n]) {
        mil_blob_close(&c->files[c->n]);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    strcpy(c->paths[c->n], path);
    *out = &c->files[c->n++];
    return NC_OK;
}
