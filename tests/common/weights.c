/* Test weights in every storage type (see weights.h). */
#include "weights.h"

#include <stdlib.h>

#include "base/half.h"
#include "cpu/cpu_quant.h"

void *nc_test_stored_weights(cpu_wtype t, int rows, int k, size_t pad, float (*value)(int i),
                             float *wf, size_t *ldw_bytes) {
    size_t ld = cpu_wtype_row_bytes(t, k) + (cpu_wtype_is_quant(t) ? 0 : pad * cpu_wtype_size(t));
    unsigned char *w = malloc(ld * (size_t)rows + 1);
    float *src = malloc(sizeof(float) * (size_t)k);
    if (!w || !src) {
        free(w);
        free(src);
        return NULL;
    }
    for (int r = 0; r < rows; r++) {
        unsigned char *row = w + (size_t)r * ld;
        for (int i = 0; i < k; i++)
            src[i] = value(i);
        if (cpu_wtype_is_quant(t)) {
            cpu_quantize_weight_row(t, src, k, row);
            cpu_dequantize_row(t, row, wf + (size_t)r * k, k);
            continue;
        }
        for (int i = 0; i < k; i++) {
            float v = src[i];
            if (t == CPU_W_F32) ((float *)row)[i] = v;
            if (t == CPU_W_F16) v = nc_fp16_to_f32(((nc_fp16 *)row)[i] = nc_f32_to_fp16(v));
            if (t == CPU_W_BF16) v = nc_bf16_to_f32(((nc_bf16 *)row)[i] = nc_f32_to_bf16(v));
            wf[(size_t)r * k + i] = v;
        }
    }
    free(src);
    *ldw_bytes = ld;
    return w;
}
