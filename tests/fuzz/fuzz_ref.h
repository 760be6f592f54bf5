/* Reference decoders for the fuzz targets' checks, written from the format
 * definitions (IEEE binary16, bfloat16 as the top half of a binary32, the
 * LSB-first sub-byte packing of weight.bin) bit by bit, independently of
 * src/base/half.h and src/mil, so a target can compare what the library
 * read with what the bytes say. Header-only, like fuzz_files.h. */
#ifndef NC_TESTS_FUZZ_REF_H
#define NC_TESTS_FUZZ_REF_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline double fuzz_fp16_to_f64(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (exp == 0x1f)
        v = mant ? NAN : INFINITY;
    else if (exp == 0)
        v = ldexp((double)mant, -24);
    else
        v = ldexp((double)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

static inline float fuzz_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Element i of a stream of `bits`-bit values packed LSB first. */
static inline unsigned fuzz_sub_byte(const uint8_t *p, size_t i, int bits) {
    unsigned v = 0;
    for (int b = 0; b < bits; b++) {
        size_t bit = i * (size_t)bits + (size_t)b;
        v |= (unsigned)((p[bit / 8] >> (bit % 8)) & 1u) << b;
    }
    return v;
}

/* Equal values, or both NaN. */
static inline int fuzz_same(double a, double b) {
    return (isnan(a) && isnan(b)) || a == b;
}

#endif
