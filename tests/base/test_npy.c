/* .npy reading: a file written by numpy (bytes fixed below, produced by
 * np.save of np.arange(6, dtype=np.float32).reshape(2, 3)), our writer read
 * back, and malformed headers rejected with a message. */
#include "../test.h"
#include "base/mmap.h"
#include "io/npy.h"

static void test_npy_reads_numpy_bytes(void) {
    nc_npy a;
    nc_error err;
    CHECK_OK(nc_npy_read("tests/fuzz/corpus/fuzz_npy/f32_2x3.npy", &a, &err), &err);
    CHECK(a.dtype == NC_NPY_F32 && a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3);
    CHECK(((float *)a.data)[5] == 6.0f);
    nc_npy_free(&a);
}

static void test_npy_write_then_read(void) {
    nc_error err;
    int64_t shape[1] = {4};
    int16_t v[4] = {-1, 2, -3, 4};
    CHECK_OK(nc_npy_write("build/test_npy_tmp.npy", NC_NPY_I16, 1, shape, v, &err), &err);
    nc_npy a;
    CHECK_OK(nc_npy_read("build/test_npy_tmp.npy", &a, &err), &err);
    CHECK(a.dtype == NC_NPY_I16 && a.ndim == 1 && a.shape[0] == 4);
    CHECK(((int16_t *)a.data)[2] == -3);
    nc_npy_free(&a);
    remove("build/test_npy_tmp.npy");
}

static void test_npy_rejects_bad_headers(void) {
    nc_npy a;
    nc_error err;
    const char bad_magic[] = "NOTNUMPY..............";
    CHECK(nc_npy_parse(bad_magic, sizeof bad_magic, "x.npy", &a, &err) == NC_ERR_FORMAT);
    CHECK(strstr(err.msg, "x.npy") != NULL);
    char big_endian[128] = "\x93NUMPY\x01\x00\x40\x00{'descr': '>f4', 'fortran_order': False, "
                           "'shape': (1,), }";
    CHECK(nc_npy_parse(big_endian, sizeof big_endian, "y.npy", &a, &err) != NC_OK);
    char truncated[80] = "\x93NUMPY\x01\x00\x40\x00{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (100,), }";
    CHECK(nc_npy_parse(truncated, sizeof truncated, "z.npy", &a, &err) == NC_ERR_FORMAT);
    CHECK(strstr(err.msg, "truncated") != NULL);
}

int main(void) {
    RUN(test_npy_reads_numpy_bytes);
    RUN(test_npy_write_then_read);
    RUN(test_npy_rejects_bad_headers);
    return nc_test_exit_code();
}
