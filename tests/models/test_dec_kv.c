/* The decoders' KV cache layout (dec_kv.h): a stored row's heads land at
 * [layer][head][position][head_dim], fp32 or rounded to fp16, the layer's
 * rows are handed to the attention with the head stride that reaches them,
 * and a copy into a state of a longer context puts each head's positions at
 * that context's head stride. Positions are computed here from the layout,
 * not from dec_kv's own helpers. */
#include "../test.h"
#include "base/half.h"
#include "models/dec_kv.h"

enum { LAYERS = 2, HEADS = 3, HD = 4, DIM = HEADS * HD };

/* Element e of head h of a row stored at layer l, position t. */
static float value(int l, int t, int h, int e) {
    return (float)(1000 * l + 100 * t + 10 * h + e) * 0.25f;
}

static float read_at(const void *cache, int f16, size_t i) {
    return f16 ? nc_fp16_to_f32(((const nc_fp16 *)cache)[i]) : ((const float *)cache)[i];
}

static void test_rows_land_head_major_and_copy_to_a_longer_context(void) {
    for (int f16 = 0; f16 < 2; f16++) {
        const int ctx = 5, longer = 9, n = 4;
        size_t esz = f16 ? 2 : 4;
        dec_kv kv = {DIM, HD, ctx, f16}, big = {DIM, HD, longer, f16};
        void *k = calloc((size_t)LAYERS * ctx * DIM, esz), *v = calloc((size_t)LAYERS * ctx * DIM, esz);
        void *k2 = calloc((size_t)LAYERS * longer * DIM, esz),
             *v2 = calloc((size_t)LAYERS * longer * DIM, esz);
        CHECK(k && v && k2 && v2);
        CHECK(dec_kv_head_stride(&kv) == (size_t)ctx * HD);
        for (int l = 0; l < LAYERS; l++)
            for (int t = 0; t < n; t++) {
                float kr[DIM], vr[DIM];
                for (int h = 0; h < HEADS; h++)
                    for (int e = 0; e < HD; e++) {
                        kr[h * HD + e] = value(l, t, h, e);
                        vr[h * HD + e] = -value(l, t, h, e);
                    }
                const void *krows, *vrows;
                dec_kv_store(&kv, k, v, l, t, kr, vr, &krows, &vrows);
                CHECK(krows == (char *)k + (size_t)l * ctx * DIM * esz);
                CHECK(vrows == (char *)v + (size_t)l * ctx * DIM * esz);
            }
        dec_kv_copy(&big, k2, &kv, k, LAYERS, n);
        dec_kv_copy(&big, v2, &kv, v, LAYERS, n);
        for (int l = 0; l < LAYERS; l++)
            for (int h = 0; h < HEADS; h++)
                for (int t = 0; t < n; t++)
                    for (int e = 0; e < HD; e++) {
                        size_t at = (((size_t)l * HEADS + h) * ctx + t) * HD + e;
                        size_t at2 = (((size_t)l * HEADS + h) * longer + t) * HD + e;
                        float want = value(l, t, h, e); /* exact in fp16 too */
                        CHECKF(read_at(k, f16, at) == want && read_at(v, f16, at) == -want,
                               "f16 %d layer %d head %d pos %d", f16, l, h, t);
                        CHECKF(read_at(k2, f16, at2) == want && read_at(v2, f16, at2) == -want,
                               "copy: f16 %d layer %d head %d pos %d", f16, l, h, t);
                    }
        free(k);
        free(v);
        free(k2);
        free(v2);
    }
}

int main(void) {
    RUN(test_rows_land_head_major_and_copy_to_a_longer_context);
    return nc_test_exit_code();
}
