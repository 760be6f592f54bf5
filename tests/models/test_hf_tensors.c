/* hft_find (src/models/hf_tensors.c), the shape check every CPU loader
 * relies on, on a safetensors file written here: each dimension is
 * compared, the last one included (a mutant that stopped one short passed
 * every parity test, since real checkpoints have the right shapes), and
 * the rank too. */
#include <sys/stat.h>

#include "../test.h"
#include "io/hf_weights.h"
#include "io/safetensors_write.h"
#include "models/hf_tensors.h"

#define DIR "build/test_hf_tensors"

static nc_status zero_fill(void *ctx, int index, size_t first, size_t n, void *dst, nc_error *err) {
    (void)ctx, (void)index, (void)first, (void)err;
    memset(dst, 0, n * 4);
    return NC_OK;
}

static void test_every_dimension_is_checked(void) {
    mkdir("build", 0777);
    mkdir(DIR, 0777);
    const st_write_tensor ts[2] = {{"m", ST_F32, 2, {2, 3}}, {"c", ST_F32, 3, {1, 2, 3}}};
    nc_error err;
    CHECK_OK(st_write_file(DIR "/model.safetensors", ts, 2, zero_fill, NULL, &err), &err);
    hf_weights *w;
    CHECK_OK(hf_weights_open(DIR, &w, &err), &err);
    static const struct {
        const char *name;
        int ndim;
        int64_t shape[3];
        int ok;
    } cases[] = {
        {"m", 2, {2, 3, 0}, 1}, {"m", 2, {2, 4, 0}, 0}, {"m", 2, {2, 2, 0}, 0},
        {"m", 2, {3, 3, 0}, 0}, {"m", 3, {2, 3, 1}, 0}, {"c", 3, {1, 2, 3}, 1},
        {"c", 3, {1, 2, 4}, 0}, {"c", 3, {1, 3, 3}, 0}, {"c", 2, {1, 2, 0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const st_tensor *t = NULL;
        nc_status st = hft_find(w, DIR, cases[i].name, cases[i].ndim, cases[i].shape, &t, &err);
        CHECKF(cases[i].ok ? st == NC_OK && t != NULL
                           : st == NC_ERR_FORMAT && strstr(err.msg, "the config needs"),
               "case %zu (%s): status %d (%s)", i, cases[i].name, (int)st,
               st == NC_OK ? "accepted" : err.msg);
    }
    hf_weights_close(w);
}

int main(void) {
    RUN(test_every_dimension_is_checked);
    return nc_test_exit_code();
}
