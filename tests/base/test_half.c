/* fp16/bf16 conversions against values fixed by IEEE 754 binary16 and by
 * numpy's float16 (which rounds to nearest even): edge cases written out. */
#include "../test.h"
#include "base/half.h"

static void test_fp16_known_bit_patterns(void) {
    CHECK(nc_f32_to_fp16(1.0f) == 0x3c00);
    CHECK(nc_f32_to_fp16(-2.0f) == 0xc000);
    CHECK(nc_f32_to_fp16(65504.0f) == 0x7bff);
    CHECK(nc_f32_to_fp16(65520.0f) == 0x7c00);     /* rounds up to inf */
    CHECK(nc_f32_to_fp16(65519.99f) == 0x7bff);    /* just below the tie */
    CHECK(nc_f32_to_fp16(5.9604645e-8f) == 0x0001); /* smallest subnormal */
    CHECK(nc_f32_to_fp16(2.9802322e-8f) == 0x0000); /* exactly half: ties to even (0) */
    CHECK(nc_f32_to_fp16(2.9802326e-8f) == 0x0001); /* just above half */
    CHECK(nc_f32_to_fp16(6.1035156e-5f) == 0x0400); /* smallest normal */
    CHECK(nc_f32_to_fp16(1.0f + 1.0f / 2048) == 0x3c00); /* tie, to even */
    CHECK(nc_f32_to_fp16(1.0f + 3.0f / 2048) == 0x3c02); /* tie, to even (up) */
    CHECK(nc_f32_to_fp16(-0.0f) == 0x8000);
    CHECK(nc_f32_to_fp16(INFINITY) == 0x7c00);
    CHECK((nc_f32_to_fp16(NAN) & 0x7c00) == 0x7c00 && (nc_f32_to_fp16(NAN) & 0x3ff) != 0);
    CHECK(nc_fp16_to_f32(0x3555) == 0.333251953125f);
    CHECK(nc_fp16_to_f32(0x0001) == 5.9604644775390625e-8f);
    CHECK(isinf(nc_fp16_to_f32(0xfc00)) && nc_fp16_to_f32(0xfc00) < 0);
    CHECK(isnan(nc_fp16_to_f32(0x7e00)));
}

static void test_fp16_roundtrip_all_finite_values(void) {
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN payloads */
        CHECKF(nc_f32_to_fp16(nc_fp16_to_f32((nc_fp16)h)) == h, "h=0x%04x", h);
    }
}

static void test_bf16_rounding_and_overflow_into_fp16(void) {
    CHECK(nc_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(nc_f32_to_bf16(1.00390625f) == 0x3f80); /* tie to even */
    CHECK(nc_f32_to_bf16(1.01171875f) == 0x3f82); /* tie to even (up) */
    CHECK(nc_bf16_to_f32(0x4049) == 3.140625f);
    nc_bf16 src[3] = {0x3f80, 0x4780 /* 65536 */, 0xc780};
    nc_fp16 dst[3];
    CHECK(nc_bf16_to_fp16_n(src, dst, 3, 0) == 2);
    CHECK(dst[0] == 0x3c00 && dst[1] == 0x7c00 && dst[2] == 0xfc00);
    CHECK(nc_bf16_to_fp16_n(src, dst, 3, 1) == 2);
    CHECK(dst[1] == 0x7bff && dst[2] == 0xfbff);
}

int main(void) {
    RUN(test_fp16_known_bit_patterns);
    RUN(test_fp16_roundtrip_all_finite_values);
    RUN(test_bf16_rounding_and_overflow_into_fp16);
    return nc_test_exit_code();
}
