/* Multithreaded matrix products against weight matrices read from the mmap:
 * the rows of W are split into tasks on the thread pool, and within a task
 * the activation rows go through in blocks so a block of weights stays in
 * cache while every activation row of the block uses it (prefill), while a
 * single activation row streams the weights once (decoding). */
#ifndef NC_CPU_MATMUL_H
#define NC_CPU_MATMUL_H

#include "base/pool.h"
#include "cpu/cpu_kernels.h"

typedef struct cpu_mat {
    cpu_wtype type;
    const void *data; /* [rows, cols], row-major, rows contiguous */
    int rows, cols;
} cpu_mat;

/* Y[t, r] (row stride ldy) = sum_k X[t, k] (row stride ldx) * W[r, k] for t < n. */
void cpu_matmul(nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w, const float *x,
                size_t ldx, float *y, size_t ldy, int n);

size_t cpu_mat_bytes(const cpu_mat *w);

#endif
