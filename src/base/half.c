/* Bulk fp16/bf16 conversions (loops over the exact scalar conversions; the
 * compiler vectorises the simple ones, and none of them is on a hot path that
 * the SIMD kernels in src/cpu do not already cover). */
#include "base/half.h"

void nc_fp16_to_f32_n(const nc_fp16 *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = nc_fp16_to_f32(src[i]);
}
void nc_f32_to_fp16_n(const float *src, nc_fp16 *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = nc_f32_to_fp16(src[i]);
}
void nc_bf16_to_f32_n(const nc_bf16 *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = nc_bf16_to_f32(src[i]);
}
void nc_f32_to_bf16_n(const float *src, nc_bf16 *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = nc_f32_to_bf16(src[i]);
}

size_t nc_bf16_to_fp16_n(const nc_bf16 *src, nc_fp16 *dst, size_t n, int clamp) {
    size_t overflowed = 0;
    for (size_t i = 0; i < n; i++) {
        float f = nc_bf16_to_f32(src[i]);
        nc_fp16 h = nc_f32_to_fp16(f);
        if ((h & 0x7fff) == 0x7c00 && (src[i] & 0x7f80) != 0x7f80) {
            overflowed++;
            if (clamp) h = (nc_fp16)((h & 0x8000) | 0x7bff);
        }
        dst[i] = h;
    }
    return overflowed;
}
