/* KV cache rows and the per-head q/k norm + RoPE shared by the CPU decoders
 * (see dec_kv.h). */
#include "models/dec_kv.h"

#include <string.h>

#include "base/half.h"

static size_t elem_size(const dec_kv *kv) {
    return kv->f16 ? sizeof(nc_fp16) : sizeof(float);
}

char *dec_kv_layer(const dec_kv *kv, void *cache, int layer) {
    return (char *)cache + (size_t)layer * kv->ctx * kv->dim * elem_size(kv);
}

size_t dec_kv_head_stride(const dec_kv *kv) {
    return (size_t)kv->ctx * kv->head_dim;
}

/* Each head of src (dim floats) to its place for position pos in a layer. */
static void store_row(const dec_kv *kv, char *layer_rows, int pos, const float *src) {
    size_t hd = (size_t)kv->head_dim, esz = elem_size(kv);
    for (size_t h = 0; h < kv->dim / hd; h++) {
        char *dst = layer_rows + (h * dec_kv_head_stride(kv) + (size_t)pos * hd) * esz;
        if (kv->f16)
            nc_f32_to_fp16_n(src + h * hd, (nc_fp16 *)dst, hd);
        else
            memcpy(dst, src + h * hd, hd * sizeof(float));
    }
}

void dec_kv_store(const dec_kv *kv, void *k_cache, void *v_cache, int layer, int pos,
                  const float *k, const float *v, const void **k_rows, const void **v_rows) {
    char *kl = dec_kv_layer(kv, k_cache, layer), *vl = dec_kv_layer(kv, v_cache, layer);
    store_row(kv, kl, pos, k);
    store_row(kv, vl, pos, v);
    *k_rows = kl;
    *v_rows = vl;
}

void dec_kv_copy(const dec_kv *to, void *dst, const dec_kv *from, const void *src, int layers,
                 int n) {
    size_t hd = (size_t)from->head_dim, esz = elem_size(from);
    for (int l = 0; l < layers; l++) {
        const char *from_layer = (const char *)src + (size_t)l * from->ctx * from->dim * esz;
        for (size_t h = 0; h < from->dim / hd; h++)
            memcpy(dec_kv_layer(to, dst, l) + h * dec_kv_head_stride(to) * esz,
                   from_layer + h * dec_kv_head_stride(from) * esz, (size_t)n * hd * esz);
    }
}

void dec_norm_rope_heads(const cpu_row_kernels *rows, float *x, int heads, int head_dim,
                         const float *w, float eps, const float *cos, const float *sin,
                         int rot_dim) {
    for (int h = 0; h < heads; h++) {
        float *xh = x + (size_t)h * head_dim;
        if (w) rows->rmsnorm(xh, xh, w, head_dim, eps);
        rows->rope(xh, cos, sin, rot_dim);
    }
}
