/* Per-layer hidden-state dumps (layer_dump.h). */
#include "gen/layer_dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/npy.h"

typedef struct layer_rows {
    float *data;
    size_t n_rows, cap_rows;
} layer_rows;

struct gen_layer_dump {
    char dir[4096];
    int n_layers, width;
    layer_rows *layers;
    int broken; /* 1: a hook call could not be recorded */
};

nc_status gen_layer_dump_new(const char *dir, int n_layers, int width, gen_layer_dump **out,
                             nc_error *err) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return nc_fail(err, NC_ERR_IO, "--dump-layers %s: cannot create the folder: %s", dir,
                       strerror(errno));
    gen_layer_dump *d = calloc(1, sizeof *d);
    if (d) d->layers = calloc((size_t)(n_layers > 0 ? n_layers : 1), sizeof *d->layers);
    if (!d || !d->layers) {
        free(d);
        return nc_fail(err, NC_ERR_NOMEM, "--dump-layers: out of memory");
    }
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    d->n_layers = n_layers;
    d->width = width;
    *out = d;
    return NC_OK;
}

void gen_layer_dump_hook(void *user, int layer, const float *rows, int n_rows, int width) {
    gen_layer_dump *d = user;
    if (layer < 0 || layer >= d->n_layers || width != d->width || n_rows < 0) {
        d->broken = 1;
        return;
    }
    layer_rows *l = &d->layers[layer];
    if (l->n_rows + (size_t)n_rows > l->cap_rows) {
        size_t cap = l->cap_rows ? l->cap_rows * 2 : 64;
        while (cap < l->n_rows + (size_t)n_rows)
            cap *= 2;
        float *p = realloc(l->data, cap * (size_t)width * sizeof *p);
        if (!p) {
            d->broken = 1;
            return;
        }
        l->data = p;
        l->cap_rows = cap;
    }
    memcpy(l->data + l->n_rows * (size_t)width, rows, (size_t)n_rows * width * sizeof *rows);
    l->n_rows += (size_t)n_rows;
}

nc_status gen_layer_dump_write(gen_layer_dump *d, nc_error *err) {
    if (d->broken)
        return nc_fail(err, NC_ERR_INTERNAL,
                       "--dump-layers %s: some hidden states could not be recorded", d->dir);
    for (int l = 0; l < d->n_layers; l++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/layer_%02d.npy", d->dir, l);
        int64_t shape[2] = {(int64_t)d->layers[l].n_rows, d->width};
        NC_TRY(nc_npy_write(path, NC_NPY_F32, 2, shape,
                            d->layers[l].data ? (const void *)d->layers[l].data : (const void *)"",
                            err));
    }
    return NC_OK;
}

void gen_layer_dump_free(gen_layer_dump *d) {
    if (!d) return;
    for (int l = 0; l < d->n_layers; l++)
        free(d->layers[l].data);
    free(d->layers);
    free(d);
}
