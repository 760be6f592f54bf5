/* Quantizing weights (for `nectar quantize`) and activations (per forward
 * pass) into the block formats of cpu_quant.h, and dequantizing rows (the
 * embedding lookup of a quantized, tied embedding). Portable C: weights are
 * quantized once; the activation loops are written so the compiler
 * vectorises them (a 2048-value row: 5.5 -> 2.2 us here, SSE2). */
#include "cpu/cpu_quant.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "base/half.h"

static float block_amax(const float *x, int n, float *signed_max) {
    float amax = 0.0f, smax = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            smax = x[i];
        }
    if (signed_max) *signed_max = smax;
    return amax;
}

static int clampi(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* Round half away from zero, inline (lroundf is a libm call per value; the
 * activations of a prompt are millions of values). |v| <= 128 here. */
static inline int round_away(float v) {
    return (int)(v + (v >= 0.0f ? 0.5f : -0.5f));
}

/* One Q8 block of n <= 32 values (the rest of the block is zero). */
static void q8_block(const float *x, int n, uint8_t *dst) {
    float d = nc_round_fp16(block_amax(x, n, NULL) / 127.0f);
    nc_fp16 dh = nc_f32_to_fp16(d);
    memcpy(dst, &dh, 2);
    int8_t *q = (int8_t *)(dst + 2);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < CPU_QBLOCK; i++)
        q[i] = (int8_t)(i < n ? clampi(round_away(x[i] * id), -127, 127) : 0);
}

/* One Q4 block: as llama.cpp's Q4_0, the value of largest magnitude maps to
 * code 0 (-8 * d), which uses the full 16 levels on that side. */
static void q4_block(const float *x, int n, uint8_t *dst) {
    float smax;
    block_amax(x, n, &smax);
    float d = nc_round_fp16(smax / -8.0f);
    nc_fp16 dh = nc_f32_to_fp16(d);
    memcpy(dst, &dh, 2);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t codes[CPU_QBLOCK];
    for (int i = 0; i < CPU_QBLOCK; i++)
        codes[i] = (uint8_t)(i < n ? clampi(round_away(x[i] * id) + 8, 0, 15) : 8);
    for (int i = 0; i < 16; i++)
        dst[2 + i] = (uint8_t)(codes[i] | codes[i + 16] << 4);
}

void cpu_quantize_weight_row(cpu_wtype t, const float *src, int cols, void *dst) {
    uint8_t *o = dst;
    size_t bb = t == CPU_W_Q8 ? CPU_Q8_BLOCK_BYTES : CPU_Q4_BLOCK_BYTES;
    for (int j = 0; j < cpu_qblocks(cols); j++) {
        int n = cols - j * CPU_QBLOCK < CPU_QBLOCK ? cols - j * CPU_QBLOCK : CPU_QBLOCK;
        if (t == CPU_W_Q8)
            q8_block(src + (size_t)j * CPU_QBLOCK, n, o + j * bb);
        else
            q4_block(src + (size_t)j * CPU_QBLOCK, n, o + j * bb);
    }
}

void cpu_dequantize_row(cpu_wtype t, const void *src, float *dst, int cols) {
    const uint8_t *b = src;
    size_t bb = t == CPU_W_Q8 ? CPU_Q8_BLOCK_BYTES : CPU_Q4_BLOCK_BYTES;
    for (int i = 0; i < cols; i++) {
        const uint8_t *blk = b + (size_t)(i / CPU_QBLOCK) * bb;
        int e = i % CPU_QBLOCK;
        nc_fp16 dh;
        memcpy(&dh, blk, 2);
        float d = nc_fp16_to_f32(dh);
        if (t == CPU_W_Q8)
            dst[i] = d * (float)((const int8_t *)(blk + 2))[e];
        else
            dst[i] = d * (float)((e < 16 ? blk[2 + e] & 15 : blk[2 + e - 16] >> 4) - 8);
    }
}

size_t cpu_qact_q_bytes(int n, int k) {
    return (size_t)n * (size_t)cpu_qblocks(k) * CPU_QBLOCK;
}
size_t cpu_qact_s_bytes(int n, int k) {
    return (size_t)n * (size_t)cpu_qblocks(k) * CPU_QSCALE_REP * sizeof(float);
}

/* The largest |x| of n values, as the maximum of their bits with the sign
 * cleared (the same order as the floats for everything but NaN): an
 * integer max the compilers vectorise, where a float one they must not
 * reorder. */
static inline float amax_bits(const float *x, int n) {
    uint32_t m = 0;
    for (int i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &x[i], 4);
        b &= 0x7fffffffu;
        m = b > m ? b : m;
    }
    float a;
    memcpy(&a, &m, 4);
    return a;
}

/* n codes round(x * id), ties away from zero, clamped to +-127; written
 * as two branch-free loops (float to int32, then int32 to int8) because
 * the compilers vectorise those and not one loop mixing the widths. */
static inline void act_codes(const float *x, int n, float id, int8_t *q) {
    int32_t c[CPU_QBLOCK];
    for (int i = 0; i < n; i++) {
        float v = x[i] * id;
        c[i] = (int32_t)(v + copysignf(0.5f, v)); /* |v| <= 127 */
    }
    for (int i = 0; i < n; i++) {
        int32_t v = c[i] < -127 ? -127 : c[i];
        q[i] = (int8_t)(v > 127 ? 127 : v);
    }
}

void cpu_quantize_act_row(const float *x, int k, int8_t *q, float *s) {
    for (int j = 0; j < cpu_qblocks(k); j++) {
        int n = k - j * CPU_QBLOCK < CPU_QBLOCK ? k - j * CPU_QBLOCK : CPU_QBLOCK;
        const float *xb = x + (size_t)j * CPU_QBLOCK;
        int8_t *qb = q + (size_t)j * CPU_QBLOCK;
        float amax = n == CPU_QBLOCK ? amax_bits(xb, CPU_QBLOCK) : amax_bits(xb, n);
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        if (!(amax <= FLT_MAX)) {
            /* an inf or NaN in the block: converting it to a code is undefined;
             * zero codes under the non-finite scale keep the sums non-finite */
            memset(qb, 0, CPU_QBLOCK);
        } else if (n == CPU_QBLOCK) {
            act_codes(xb, CPU_QBLOCK, id, qb);
        } else {
            act_codes(xb, n, id, qb);
            memset(qb + n, 0, (size_t)(CPU_QBLOCK - n));
        }
        for (int r = 0; r < CPU_QSCALE_REP; r++)
            s[j * CPU_QSCALE_REP + r] = d;
    }
}
