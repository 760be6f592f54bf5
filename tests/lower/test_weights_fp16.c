/* Checkpoint -> fp16 conversion of the compile: values beyond fp16's range
 * saturate to +/-65504 and are counted, source inf/NaN are counted apart,
 * and the threaded result equals a one-element-at-a-time conversion. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "lower/weights_fp16.h"

static void test_overflow_saturates_and_is_counted(void) {
    float src[6] = {1.0f, 1e6f, -7e4f, INFINITY, NAN, 65504.0f};
    st_tensor t = {0};
    t.name = "w";
    t.dtype = ST_F32;
    t.ndim = 1;
    t.shape[0] = 6;
    t.n_elems = 6;
    t.data = src;
    nc_fp16 dst[6];
    lower_fp16_stats st = {0};
    nc_error err = {0};
    CHECK_OK(lower_tensor_to_fp16(NULL, &t, 0, 6, dst, &st, &err), &err);
    CHECK(dst[0] == 0x3c00 && dst[1] == 0x7bff && dst[2] == 0xfbff && dst[3] == 0x7c00);
    CHECK((dst[4] & 0x7c00) == 0x7c00 && (dst[4] & 0x3ff));
    CHECK(dst[5] == 0x7bff);
    CHECK(st.n_values == 6 && st.n_saturated == 2 && st.n_nonfinite == 2);
    /* bf16 reaches 3.4e38: 0x4780 is 65536, just past fp16 */
    nc_bf16 b[3] = {0x4780, 0xc780, 0x3f80};
    t.dtype = ST_BF16;
    t.shape[0] = t.n_elems = 3;
    t.data = b;
    memset(&st, 0, sizeof st);
    CHECK_OK(lower_tensor_to_fp16(NULL, &t, 0, 3, dst, &st, &err), &err);
    CHECK(dst[0] == 0x7bff && dst[1] == 0xfbff && dst[2] == 0x3c00 && st.n_saturated == 2);
    t.dtype = ST_I32;
    CHECK(lower_tensor_to_fp16(NULL, &t, 0, 3, dst, &st, &err) == NC_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "tensor w") != NULL);
}

static void test_threaded_conversion_equals_serial(void) {
    size_t n = 300000; /* several chunks */
    nc_bf16 *b = malloc(n * sizeof *b);
    nc_fp16 *a = malloc(n * sizeof *a), *c = malloc(n * sizeof *c);
    for (size_t i = 0; i < n; i++) b[i] = (nc_bf16)(i * 2654435761u >> 16);
    st_tensor t = {0};
    t.name = "big";
    t.dtype = ST_BF16;
    t.ndim = 1;
    t.shape[0] = (int64_t)n;
    t.n_elems = n;
    t.data = b;
    nc_pool *pool = NULL;
    nc_error err = {0};
    CHECK_OK(nc_pool_new(2, &pool, &err), &err);
    lower_fp16_stats s1 = {0}, s2 = {0};
    CHECK_OK(lower_tensor_to_fp16(pool, &t, 1000, n - 1000, a, &s1, &err), &err);
    for (size_t i = 1000; i < n; i++) CHECK_OK(lower_tensor_to_fp16(NULL, &t, i, 1, c + i - 1000, &s2, &err), &err);
    CHECK(!memcmp(a, c, (n - 1000) * sizeof *a));
    CHECK(s1.n_saturated == s2.n_saturated && s1.n_nonfinite == s2.n_nonfinite && s1.n_saturated > 0);
    nc_pool_free(pool);
    free(a);
    free(b);
    free(c);
}

int main(void) {
    RUN(test_overflow_saturates_and_is_counted);
    RUN(test_threaded_conversion_equals_serial);
    return nc_test_exit_code();
}
