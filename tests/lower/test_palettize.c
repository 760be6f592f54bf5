/* Palettization (src/lower/palettize.c) against references computed here in
 * double precision: few distinct values are kept exactly; on Gaussian
 * weights every index is the nearest table entry (brute force), every entry
 * is the mean of its weights (Lloyd's condition) and the 4-bit distortion
 * is that of the optimal 16-level Gaussian quantizer (Max 1960: 0.009497
 * sigma^2); groups of output channels get their own tables; bad input is
 * one clear error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "lower/palettize.h"

static double expand(const lower_palette *p, size_t i, size_t group_elems) {
    size_t g = i / group_elems;
    return nc_fp16_to_f32(p->lut[g * ((size_t)1 << p->bits) + p->indices[i]]);
}

static void test_few_distinct_values_are_kept_exactly(void) {
    enum { R = 4, C = 64 };
    nc_fp16 w[R * C];
    for (int i = 0; i < R * C; i++)
        w[i] = nc_f32_to_fp16((float)((i * 7) % 10) * 0.37f - 1.5f);
    lower_weight lw = {.data = w};
    lower_weight_shape4(&lw, R, C, 1, 1);
    lower_palette_options o = {.bits = 4, .group_size = 0, .seed = 1};
    lower_palette_stats s = {0};
    nc_error err = {0};
    CHECK_OK(lower_palettize(NULL, &lw, &o, "w", &s, &err), &err);
    CHECK(lw.pal->n_groups == 1 && lw.pal->bits == 4);
    for (int i = 0; i < R * C; i++)
        CHECK(expand(lw.pal, (size_t)i, R * C) == nc_fp16_to_f32(w[i]));
    for (int e = 1; e < 16; e++)
        CHECK(nc_fp16_to_f32(lw.pal->lut[e - 1]) <= nc_fp16_to_f32(lw.pal->lut[e]));
    CHECK(s.sum_sq_err == 0 && s.n_weights == R * C && s.n_tensors == 1);
    CHECK(s.dense_bytes == 2 * R * C && s.stored_bytes == R * C / 2 + 32);
    free(lw.pal);
}

static double gauss(uint64_t *s) {
    double u1, u2;
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    u1 = ((double)(*s >> 11) + 0.5) * 0x1p-53;
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    u2 = (double)(*s >> 11) * 0x1p-53;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static void test_gaussian_4bit_is_a_lloyd_max_quantizer(void) {
    enum { R = 64, C = 1024, K = 16 };
    size_t n = (size_t)R * C;
    nc_fp16 *w = malloc(n * sizeof *w);
    uint64_t seed = 42;
    for (size_t i = 0; i < n; i++)
        w[i] = nc_f32_to_fp16((float)(0.02 * gauss(&seed)));
    lower_weight lw = {.data = w};
    lower_weight_shape4(&lw, R, C, 1, 1);
    lower_palette_options o = {.bits = 4, .group_size = 0, .seed = 7};
    nc_pool *pool = NULL;
    nc_error err = {0};
    CHECK_OK(nc_pool_new(2, &pool, &err), &err);
    lower_palette_stats s = {0};
    CHECK_OK(lower_palettize(pool, &lw, &o, "w", &s, &err), &err);
    double lut[K], sum[K] = {0}, cnt[K] = {0}, se = 0, s2 = 0;
    for (int e = 0; e < K; e++)
        lut[e] = nc_fp16_to_f32(lw.pal->lut[e]);
    for (size_t i = 0; i < n; i++) {
        double v = nc_fp16_to_f32(w[i]), best = INFINITY;
        for (int e = 0; e < K; e++)
            best = fmin(best, fabs(v - lut[e]));
        int e = lw.pal->indices[i];
        CHECKF(e < K && fabs(v - lut[e]) == best, "weight %zu: %g -> entry %d (%g), nearest %g", i,
               v, e, lut[e], best);
        sum[e] += v;
        cnt[e] += 1;
        se += (v - lut[e]) * (v - lut[e]);
        s2 += v * v;
    }
    /* Lloyd's centroid condition, up to the table's fp16 rounding */
    for (int e = 0; e < K; e++)
        CHECKF(cnt[e] > 0 && fabs(sum[e] / cnt[e] - lut[e]) <= fabs(lut[e]) * 0x1p-10 + 1e-6,
               "entry %d: %g, mean of its %g weights %g", e, lut[e], cnt[e], sum[e] / cnt[e]);
    double rel = se / s2; /* the sample variance stands in for sigma^2 */
    CHECKF(rel > 0.0090 && rel < 0.0100, "relative distortion %g, Lloyd-Max 0.009497", rel);
    CHECK_NEAR(s.sum_sq_err / s.sum_sq, rel, 1e-9);
    /* the same seed gives the same bundle bytes */
    lower_palette *first = lw.pal;
    lw.pal = NULL;
    CHECK_OK(lower_palettize(pool, &lw, &o, "w", NULL, &err), &err);
    CHECK(!memcmp(first->indices, lw.pal->indices, n) && !memcmp(first->lut, lw.pal->lut, 2 * K));
    free(first);
    free(lw.pal);
    nc_pool_free(pool);
    free(w);
}

static void test_groups_of_channels_get_their_own_tables(void) {
    enum { R = 32, C = 512 };
    nc_fp16 *w = malloc(R * C * sizeof *w);
    uint64_t seed = 3;
    for (int i = 0; i < R * C; i++) /* rows 16..31 live far from rows 0..15 */
        w[i] = nc_f32_to_fp16((float)(gauss(&seed) * 0.01 + (i >= 16 * C ? 4.0 : 0.0)));
    lower_weight lw = {.data = w};
    lower_weight_shape4(&lw, R, C, 1, 1);
    lower_palette_options o = {.bits = 8, .group_size = 16, .seed = 1};
    nc_error err = {0};
    CHECK_OK(lower_palettize(NULL, &lw, &o, "w", NULL, &err), &err);
    CHECK(lw.pal->n_groups == 2);
    CHECK(nc_fp16_to_f32(lw.pal->lut[255]) < 1.0 && nc_fp16_to_f32(lw.pal->lut[256]) > 3.0);
    for (int i = 0; i < R * C; i++) /* 256 entries for 8192 values: within 2e-3 */
        CHECKF(fabs(expand(lw.pal, (size_t)i, 16 * C) - nc_fp16_to_f32(w[i])) < 2e-3, "weight %d",
               i);
    free(lw.pal);
    free(w);
    CHECK(lower_palette_group_rows(9496, 16) == 8 && lower_palette_group_rows(1024, 16) == 16);
    CHECK(lower_palette_group_rows(1024, 0) == 1024 && lower_palette_group_rows(6, 16) == 6);
    CHECK(lower_palette_index_dtype(6) == MIL_DT_UINT6 &&
          lower_palette_index_dtype(4) == MIL_DT_UINT4 &&
          lower_palette_index_dtype(8) == MIL_DT_UINT8 &&
          lower_palette_index_dtype(5) == MIL_DT_INVALID);
}

/* Zero padding: 10 x 0.0, 10 x 1.0, 10 x 3.0 in two entries. Plain 2-means
 * ends at {0.5, 3} from any seed (cost 5 vs 20 for {0, 2}), so the zeros
 * would expand to 0.5; with zero_entry the table is {0, 3} (0 pinned, 1
 * nearer 0 than 3) and every zero expands to exactly 0. */
static void test_zero_entry_keeps_padding_exactly_zero(void) {
    nc_fp16 w[30];
    for (int i = 0; i < 30; i++)
        w[i] = nc_f32_to_fp16(i < 10 ? 0.0f : i < 20 ? 1.0f : 3.0f);
    for (int pin = 0; pin < 2; pin++) {
        lower_weight lw = {.data = w};
        lower_weight_shape4(&lw, 3, 10, 1, 1);
        lower_palette_options o = {.bits = 1, .group_size = 0, .seed = 5, .zero_entry = pin};
        nc_error err = {0};
        CHECK_OK(lower_palettize(NULL, &lw, &o, "w", NULL, &err), &err);
        double e0 = nc_fp16_to_f32(lw.pal->lut[0]), e1 = nc_fp16_to_f32(lw.pal->lut[1]);
        if (pin) {
            CHECKF(e0 == 0.0 && e1 == 3.0, "pinned table {%g, %g}", e0, e1);
            for (int i = 0; i < 10; i++)
                CHECK(expand(lw.pal, (size_t)i, 30) == 0.0);
        } else {
            CHECKF(e0 == 0.5 && e1 == 3.0, "plain table {%g, %g}", e0, e1);
        }
        free(lw.pal);
    }
}

static void test_bad_input_is_one_clear_error(void) {
    nc_fp16 w[64];
    for (int i = 0; i < 64; i++)
        w[i] = nc_f32_to_fp16((float)i);
    w[9] = 0x7e00; /* NaN */
    lower_weight lw = {.data = w};
    lower_weight_shape4(&lw, 8, 8, 1, 1);
    lower_palette_options o = {.bits = 4, .group_size = 16};
    nc_error err = {0};
    CHECK(lower_palettize(NULL, &lw, &o, "model.layers.0.mlp.up_proj.weight", NULL, &err) ==
          NC_ERR_FORMAT);
    CHECK(strstr(err.msg, "up_proj.weight: element 9 is not finite") && !lw.pal);
    w[9] = 0;
    o.bits = 5;
    CHECK(lower_palettize(NULL, &lw, &o, "w", NULL, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "5 bits") && !lw.pal);
}

int main(void) {
    RUN(test_few_distinct_values_are_kept_exactly);
    RUN(test_gaussian_4bit_is_a_lloyd_max_quantizer);
    RUN(test_groups_of_channels_get_their_own_tables);
    RUN(test_zero_entry_keeps_padding_exactly_zero);
    RUN(test_bad_input_is_one_clear_error);
    return nc_test_exit_code();
}
