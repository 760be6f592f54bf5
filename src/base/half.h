/* IEEE fp16 (binary16) and bfloat16 conversions, bit-exact and portable.
 *
 * fp32 -> fp16 rounds to nearest even, produces subnormals, overflows to
 * +/-inf and keeps NaN a (quiet) NaN, exactly as hardware conversion does; the
 * MIL interpreter's fp16 mode and the weight converters depend on that. */
#ifndef NC_BASE_HALF_H
#define NC_BASE_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint16_t nc_fp16;
typedef uint16_t nc_bf16;

static inline uint32_t nc_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float nc_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float nc_fp16_to_f32(nc_fp16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f) return nc_bits_f32(sign | 0x7f800000u | (mant << 13)); /* inf/NaN */
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in fp32 */
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return nc_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

static inline nc_fp16 nc_f32_to_fp16(float f) {
    uint32_t u = nc_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf or NaN: keep NaN quiet and non-zero */
        return (nc_fp16)(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 | ((abs >> 13) & 0x3ff) : 0));
    if (abs >= 0x477ff000u) return (nc_fp16)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (abs < 0x38800000u) {
        /* result is subnormal or zero: round abs * 2^24 to an integer, ties to even */
        if (abs < 0x33000000u) return (nc_fp16)sign; /* below half the smallest subnormal */
        uint32_t e = abs >> 23, m = (abs & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (nc_fp16)(sign | q);
    }
    /* normal: rebias exponent, round mantissa 23 -> 10 bits, ties to even */
    uint32_t r = abs - 0x38000000u;
    uint32_t q = r >> 13, rem = r & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (q & 1))) q++;
    return (nc_fp16)(sign | q);
}

static inline float nc_bf16_to_f32(nc_bf16 b) { return nc_bits_f32((uint32_t)b << 16); }

static inline nc_bf16 nc_f32_to_bf16(float f) {
    uint32_t u = nc_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (nc_bf16)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);                                         /* ties to even */
    return (nc_bf16)(u >> 16);
}

/* Rounds an fp32 value through fp16 and back (the interpreter's fp16 mode). */
static inline float nc_round_fp16(float f) { return nc_fp16_to_f32(nc_f32_to_fp16(f)); }

void nc_fp16_to_f32_n(const nc_fp16 *src, float *dst, size_t n);
void nc_f32_to_fp16_n(const float *src, nc_fp16 *dst, size_t n);
void nc_bf16_to_f32_n(const nc_bf16 *src, float *dst, size_t n);
void nc_f32_to_bf16_n(const float *src, nc_bf16 *dst, size_t n);

/* bf16 -> fp16 for weight conversion; returns how many finite inputs
 * overflowed fp16's range (they become +/-inf unless clamp is set, in which
 * case they saturate to +/-65504). */
size_t nc_bf16_to_fp16_n(const nc_bf16 *src, nc_fp16 *dst, size_t n, int clamp);

#endif
