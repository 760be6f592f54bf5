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

static void store_row(const dec_kv *kv, char *dst, const float *src) {
    if (kv->f16)
        nc_f32_to_fp16_n(src, (nc_fp16 *)dst, kv->dim);
    else
        memcpy(dst, src, kv->dim * sizeof(float));
}

void dec_kv_store(const dec_kv *kv, void *k_cache, void *v_cache, int layer, int pos,
                  const float *k, const float *v, const void **k_rows, const void **v_rows) {
    char *kl = dec_kv_layer(kv, k_cache, layer), *vl = dec_kv_layer(kv, v_cache, layer);
    size_t at = (size_t)pos * kv->dim * elem_size(kv);
    store_row(kv, kl + at, k);
    store_row(kv, vl + at, v);
    *k_rows = kl;
    *v_rows = vl;
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
