/* Test weights in every storage type and their exact fp32 values, for the
 * kernel tests that compare a product against a double-precision one. */
#ifndef NC_TEST_WEIGHTS_H
#define NC_TEST_WEIGHTS_H

#include <stddef.h>

#include "cpu/cpu_kernels.h"

/* rows x k weights stored as type t, row stride *ldw_bytes (float types get
 * `pad` extra elements per row), values from value(i) for column i of each
 * row; their exact fp32 values into wf[rows][k] (Q8/Q4: cpu_dequantize_row of
 * the stored row). Returns a malloc'd buffer (NULL when out of memory). */
void *nc_test_stored_weights(cpu_wtype t, int rows, int k, size_t pad, float (*value)(int i),
                             float *wf, size_t *ldw_bytes);

#endif
