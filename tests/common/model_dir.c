/* Broken model folders for the bad-input tests (see model_dir.h). */
#include "model_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mmap.h"
#include "io/hf_weights.h"
#include "io/safetensors_write.h"

#define MAX_TENSORS 1024

typedef struct copy_ctx {
    hf_weights *src;
    st_write_tensor t[MAX_TENSORS];
    int n;
} copy_ctx;

static nc_status copy_fill(void *ctx, int k, size_t first, size_t n, void *dst, nc_error *err) {
    (void)err;
    copy_ctx *c = ctx;
    const st_tensor *s = hf_weights_find(c->src, c->t[k].name, NULL);
    size_t es = st_dtype_size(c->t[k].dtype);
    if (s && s->size_bytes >= (first + n) * es)
        memcpy(dst, (const char *)s->data + first * es, n * es);
    else
        memset(dst, 0, n * es);
    return NC_OK;
}

int nc_test_write_weights(const char *src, const char *dir, const char *drop, const char *retype,
                          const char *reshape) {
    nc_error err;
    copy_ctx *c = calloc(1, sizeof *c);
    if (!c || hf_weights_open(src, &c->src, &err) != NC_OK) {
        free(c);
        return -1;
    }
    const st_file *f = c->src->shards[0];
    for (int i = 0; i < f->n_tensors && c->n < MAX_TENSORS; i++) {
        const st_tensor *s = &f->tensors[i];
        if (drop && !strncmp(s->name, drop, strlen(drop))) continue;
        st_write_tensor *t = &c->t[c->n++];
        t->name = s->name;
        t->dtype = retype && !strcmp(s->name, retype) ? ST_I32 : s->dtype;
        t->ndim = s->ndim;
        memcpy(t->shape, s->shape, sizeof t->shape);
        if (reshape && !strcmp(s->name, reshape)) t->shape[0]++;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    nc_status st = st_write_file(path, c->t, c->n, copy_fill, c, &err);
    hf_weights_close(c->src);
    free(c);
    return st == NC_OK ? 0 : -1;
}

const char *nc_test_model_case(const char *src, const char *root, const char *name,
                               const char *from, const char *to) {
    static char dir[256];
    mkdir("build", 0777);
    mkdir(root, 0777);
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0777);
    char *cfg, path[512];
    size_t len;
    nc_error err;
    snprintf(path, sizeof path, "%s/config.json", src);
    if (nc_read_file(path, &cfg, &len, &err) != NC_OK) return NULL;
    size_t cap = len + (to ? strlen(to) : 0) + 1;
    char *out = malloc(cap);
    const char *at = from ? strstr(cfg, from) : NULL;
    if (out && at)
        snprintf(out, cap, "%.*s%s%s", (int)(at - cfg), cfg, to, at + strlen(from));
    else if (out)
        snprintf(out, cap, "%s", cfg);
    free(cfg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    nc_status st = out ? nc_write_file_atomic(path, out, strlen(out), &err) : NC_ERR_NOMEM;
    free(out);
    return st == NC_OK ? dir : NULL;
}
