/* Surface layouts and the pad/unpad copies (src/ane_host/ane_layout.c)
 * against a plain reference loop: rows of the last axis padded to 32 fp16
 * values (64 bytes) at least and to a multiple of 64 bytes, padding zero,
 * values rounded to fp16 exactly as nc_f32_to_fp16 rounds them. Widths
 * 16, 32, 48 and 4082 are the ones the reference says to test early. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "ane_host/ane_layout.h"
#include "base/half.h"

static const int64_t widths[] = {1, 16, 31, 32, 33, 48, 64, 100, 4082};
#define N_WIDTHS (int)(sizeof widths / sizeof widths[0])

/* what the row stride must be, written out independently */
static size_t expected_row_bytes(int64_t w, int elem_bytes) {
    int64_t vals_per_64 = 64 / elem_bytes, min_vals = 32;
    int64_t v = w < min_vals ? min_vals : w;
    v = (v + vals_per_64 - 1) / vals_per_64 * vals_per_64;
    return (size_t)v * (size_t)elem_bytes;
}

static float value_at(int64_t r, int64_t c) {
    return (float)((r * 7919 + c * 104729) % 2001 - 1000) / 37.0f;
}

static void test_row_strides_follow_the_64_byte_rule(void) {
    nc_error err = {0};
    for (int i = 0; i < N_WIDTHS; i++) {
        int64_t shape[4] = {1, 3, 2, widths[i]};
        ane_layout l;
        CHECK_OK(ane_layout_for("t", ANE_ELEM_FP16, 4, shape, &l, &err), &err);
        CHECK(l.rows == 6 && l.width == widths[i]);
        CHECKF(l.row_bytes == expected_row_bytes(widths[i], 2), "width %lld: %zu",
               (long long)widths[i], l.row_bytes);
        CHECK(l.row_bytes % 64 == 0 && l.bytes == 6 * l.row_bytes);
        CHECK_OK(ane_layout_for("t", ANE_ELEM_FP32, 4, shape, &l, &err), &err);
        CHECK(l.row_bytes == expected_row_bytes(widths[i], 4));
    }
    /* [1, 100, 1, 4082] fp16: rows of 4096 values (the mis-strided case) */
    int64_t s[4] = {1, 100, 1, 4082};
    ane_layout l;
    CHECK_OK(ane_layout_for("t", ANE_ELEM_FP16, 4, s, &l, &err), &err);
    CHECK(l.row_bytes == 4096 * 2 && l.bytes == 100 * 8192);
    /* a logical [256, 1] occupies [256, 32] (docs/ane-rules.md) */
    int64_t col[2] = {256, 1};
    CHECK_OK(ane_layout_for("t", ANE_ELEM_FP16, 2, col, &l, &err), &err);
    CHECK(l.rows == 256 && l.row_bytes == 64);
}

static void test_bad_shapes_and_strides_are_refused(void) {
    nc_error err = {0};
    ane_layout l;
    int64_t zero[2] = {4, 0}, neg[2] = {-1, 32}, ok[2] = {4, 32};
    CHECK(ane_layout_for("q", ANE_ELEM_FP16, 2, zero, &l, &err) == NC_ERR_RANGE);
    CHECK(strstr(err.msg, "q: dimension 1") != NULL);
    CHECK(ane_layout_for("q", ANE_ELEM_FP16, 2, neg, &l, &err) == NC_ERR_RANGE);
    CHECK(ane_layout_for("q", ANE_ELEM_FP16, 0, ok, &l, &err) == NC_ERR_RANGE);
    CHECK(ane_layout_for("q", ANE_ELEM_FP16, 6, ok, &l, &err) == NC_ERR_RANGE);
    /* runtime-reported strides: must be 64-aligned and hold the row */
    CHECK(ane_layout_from_strides("q", ANE_ELEM_FP16, 4, 40, 96, &l, &err) == NC_ERR_RANGE);
    CHECK(ane_layout_from_strides("q", ANE_ELEM_FP16, 4, 40, 64, &l, &err) == NC_ERR_RANGE);
    CHECK_OK(ane_layout_from_strides("q", ANE_ELEM_FP16, 4, 40, 128, &l, &err), &err);
    CHECK(l.bytes == 512);
}

static void test_pad_matches_reference_loop_and_round_trips(void) {
    nc_error err = {0};
    for (int e = 0; e < 2; e++) {
        ane_elem elem = e ? ANE_ELEM_FP32 : ANE_ELEM_FP16;
        for (int i = 0; i < N_WIDTHS; i++) {
            int64_t w = widths[i], rows = 3, shape[2] = {rows, w};
            ane_layout l;
            CHECK_OK(ane_layout_for("t", elem, 2, shape, &l, &err), &err);
            float *logical = malloc((size_t)(rows * w) * sizeof(float));
            float *back = malloc((size_t)(rows * w) * sizeof(float));
            uint16_t *h = malloc((size_t)(rows * w) * 2), *hb = malloc((size_t)(rows * w) * 2);
            unsigned char *surf = malloc(l.bytes), *want = calloc(1, l.bytes);
            CHECK(logical && back && h && hb && surf && want);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < w; c++) {
                    float v = value_at(r, c);
                    logical[r * w + c] = v;
                    h[r * w + c] = nc_f32_to_fp16(v);
                    size_t at =
                        (size_t)r * expected_row_bytes(w, (int)elem) + (size_t)c * (size_t)elem;
                    if (elem == ANE_ELEM_FP16)
                        memcpy(want + at, &h[r * w + c], 2);
                    else
                        memcpy(want + at, &v, 4);
                }
            memset(surf, 0xAB, l.bytes); /* the padding must be rewritten */
            ane_pad_f32(&l, logical, surf);
            int same = memcmp(surf, want, l.bytes) == 0;
            memset(surf, 0xCD, l.bytes);
            ane_pad_fp16(&l, h, surf);
            int same16 = elem == ANE_ELEM_FP32 || memcmp(surf, want, l.bytes) == 0;
            ane_unpad_f32(&l, surf, back);
            ane_unpad_fp16(&l, surf, hb);
            int round = 1;
            for (int64_t k = 0; k < rows * w; k++) {
                float exact = nc_fp16_to_f32(h[k]);
                round &= back[k] == exact && hb[k] == h[k];
            }
            free(logical);
            free(back);
            free(h);
            free(hb);
            free(surf);
            free(want);
            CHECKF(same, "fp32 -> surface, elem %d width %lld", (int)elem, (long long)w);
            CHECKF(same16, "fp16 -> surface, width %lld", (long long)w);
            CHECKF(round, "unpad, elem %d width %lld", (int)elem, (long long)w);
        }
    }
}

static void test_column_move_puts_one_token_in_column_zero(void) {
    nc_error err = {0};
    int64_t s64[4] = {1, 5, 1, 64}, s32[4] = {1, 5, 1, 32};
    ane_layout a, b;
    CHECK_OK(ane_layout_for("x", ANE_ELEM_FP16, 4, s64, &a, &err), &err);
    CHECK_OK(ane_layout_for("head_x", ANE_ELEM_FP16, 4, s32, &b, &err), &err);
    float xs[5 * 64], hx[5 * 32];
    for (int i = 0; i < 5 * 64; i++)
        xs[i] = (float)i;
    unsigned char sa[5 * 128], sb[5 * 64];
    ane_pad_f32(&a, xs, sa);
    memset(sb, 0x55, sizeof sb);
    CHECK_OK(ane_copy_columns_fp16(&a, sa, 37, &b, sb, 0, 1, 1, &err), &err);
    float colv[5];
    ane_unpad_column_f32(&a, sa, 37, colv);
    for (int r = 0; r < 5; r++)
        CHECK(colv[r] == (float)(r * 64 + 37));
    ane_unpad_f32(&b, sb, hx);
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 32; c++)
            CHECK(hx[r * 32 + c] == (c == 0 ? (float)(r * 64 + 37) : 0.0f));
    CHECK(ane_copy_columns_fp16(&a, sa, 64, &b, sb, 0, 1, 1, &err) == NC_ERR_INVALID);
    CHECK(ane_copy_columns_fp16(&a, sa, 0, &b, sb, 0, 33, 1, &err) == NC_ERR_INVALID);
}

/* A chunk of 20 tokens at column 50 of a 64-wide x (wrapping past 63) into
 * columns 0..19 of a 32-wide buffer in order, and back. */
static void test_columns_gather_in_order_and_scatter_back(void) {
    nc_error err = {0};
    int64_t s64[4] = {1, 3, 1, 64}, s32[4] = {1, 3, 1, 32};
    ane_layout a, b;
    CHECK_OK(ane_layout_for("x", ANE_ELEM_FP16, 4, s64, &a, &err), &err);
    CHECK_OK(ane_layout_for("xs", ANE_ELEM_FP16, 4, s32, &b, &err), &err);
    float xs[3 * 64], ord[3 * 32], back[3 * 64];
    for (int i = 0; i < 3 * 64; i++)
        xs[i] = (float)i;
    unsigned char sa[3 * 128], sb[3 * 64], sc[3 * 128];
    ane_pad_f32(&a, xs, sa);
    memset(sb, 0x55, sizeof sb);
    CHECK_OK(ane_copy_columns_fp16(&a, sa, 50, &b, sb, 0, 20, 1, &err), &err);
    ane_unpad_f32(&b, sb, ord);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 32; c++)
            CHECK(ord[r * 32 + c] == (c < 20 ? (float)(r * 64 + (50 + c) % 64) : 0.0f));
    /* back into a buffer of 7s: only the chunk's columns change */
    for (int i = 0; i < 3 * 64; i++)
        back[i] = 7.0f;
    ane_pad_f32(&a, back, sc);
    CHECK_OK(ane_copy_columns_fp16(&b, sb, 0, &a, sc, 50, 20, 0, &err), &err);
    ane_unpad_f32(&a, sc, back);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 64; c++) {
            int in = (c - 50 + 64) % 64 < 20;
            CHECK(back[r * 64 + c] == (in ? xs[r * 64 + c] : 7.0f));
        }
}

int main(void) {
    RUN(test_row_strides_follow_the_64_byte_rule);
    RUN(test_bad_shapes_and_strides_are_refused);
    RUN(test_pad_matches_reference_loop_and_round_trips);
    RUN(test_column_move_puts_one_token_in_column_zero);
    RUN(test_columns_gather_in_order_and_scatter_back);
    return nc_test_exit_code();
}
