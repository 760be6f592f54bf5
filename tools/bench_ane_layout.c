/* Host-side cost of the ANE request path per decode token at Qwen3-0.6B's
 * shapes (bucket 32, ctx 512): padding the host inputs into 64-byte-row
 * surfaces, and reading the logits of one token out of the 32-wide head
 * outputs (one column, against unpadding the whole surface). Not a test (no
 * timing assertions); the figures are in docs/ane-bridge.md. Build and run:
 *   make build/libnectar.a
 *   cc -O2 -std=c11 -Iinclude -Isrc -D_POSIX_C_SOURCE=200809L tools/bench_ane_layout.c \
 *      build/libnectar.a $(pkg-config --libs jansson) -lm -lpthread -o /tmp/bench_ane_layout
 *   /tmp/bench_ane_layout */
#include <stdio.h>
#include <stdlib.h>

#include "ane_host/ane_layout.h"
#include "base/timer.h"

/* Seconds per ane_pad_f32 of a [rows, width] fp32 tensor into fp16. */
static double pad_s(int64_t rows, int64_t width, int reps) {
    int64_t shape[2] = {rows, width};
    ane_layout l;
    nc_error e;
    if (ane_layout_for("t", ANE_ELEM_FP16, 2, shape, &l, &e)) return -1;
    float *src = calloc((size_t)(rows * width), sizeof(float));
    void *surface = calloc(1, l.bytes);
    if (!src || !surface) return -1;
    double t0 = nc_now_s();
    for (int i = 0; i < reps; i++) ane_pad_f32(&l, src, surface);
    double t = (nc_now_s() - t0) / reps;
    free(src);
    free(surface);
    return t;
}

int main(void) {
    double x = pad_s(1024, 32, 200), rope = pad_s(128, 32, 500), mask = pad_s(32, 512, 500),
           wr = pad_s(1, 512, 2000);
    printf("pad per token: x %.1f us, rope_cos/sin %.1f us each, attn_mask %.1f us, kv_write %.2f us, "
           "total %.1f us\n",
           x * 1e6, rope * 1e6, mask * 1e6, wr * 1e6, (x + 2 * rope + mask + wr) * 1e6);
    int64_t shape[2] = {151936, 32}; /* the head's outputs, all chunks together */
    ane_layout l;
    nc_error e;
    if (ane_layout_for("logits", ANE_ELEM_FP16, 2, shape, &l, &e)) return 1;
    void *surface = calloc(1, l.bytes);
    float *col = calloc(151936, sizeof(float)), *all = calloc((size_t)151936 * 32, sizeof(float));
    if (!surface || !col || !all) return 1;
    double t0 = nc_now_s();
    for (int i = 0; i < 20; i++) ane_unpad_column_f32(&l, surface, 0, col);
    double t_col = (nc_now_s() - t0) / 20;
    t0 = nc_now_s();
    for (int i = 0; i < 20; i++) ane_unpad_f32(&l, surface, all);
    double t_all = (nc_now_s() - t0) / 20;
    printf("logits, 151936 rows: one column %.3f ms, whole surface %.3f ms\n", t_col * 1e3, t_all * 1e3);
    free(surface);
    free(col);
    free(all);
    return 0;
}
