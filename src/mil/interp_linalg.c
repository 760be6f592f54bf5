/* Matrix kernels of the MIL interpreter: matmul (transpose flags, batch
 * broadcasting), linear and N-d convolution (groups, stride, padding,
 * dilation). All accumulate in fp32, as the ANE's MAC arrays do; the 1x1
 * convolution (the ANE's linear layer) has its own fast loop. Work splits
 * into tasks on an optional thread pool; every output element is computed
 * by one task in the same order, so results do not depend on threads. */
#include <string.h>

#include "base/pool.h"
#include "mil/interp_kernels.h"

/* c_r[j] += a_r * b[j] for four rows r: the inner step of gemm_rows. Its
 * own function so that restrict holds and the loop vectorizes (fixed
 * chunks of 8: -O2 vectorizes loops of known trip count). */
static void axpy4(float *restrict c0, float *restrict c1, float *restrict c2, float *restrict c3,
                  const float *restrict b, float a0, float a1, float a2, float a3, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int t = 0; t < 8; t++) {
            float bv = b[j + t];
            c0[j + t] += a0 * bv;
            c1[j + t] += a1 * bv;
            c2[j + t] += a2 * bv;
            c3[j + t] += a3 * bv;
        }
    for (; j < n; j++) {
        float bv = b[j];
        c0[j] += a0 * bv;
        c1[j] += a1 * bv;
        c2[j] += a2 * bv;
        c3[j] += a3 * bv;
    }
}

static void axpy1(float *restrict c, const float *restrict b, float a, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int t = 0; t < 8; t++) c[j + t] += a * b[j + t];
    for (; j < n; j++) c[j] += a * b[j];
}

/* C[M,N] = A·B with B's rows contiguous (B(k,j) = b[k*bk + j]) and
 * A(i,k) = a[i*ai + k*ak]. Four rows of C at a time, so each row of B is
 * read once per four; every element still sums over k in order. */
static void gemm_rows(const float *a, int64_t ai, int64_t ak, const float *b, int64_t bk,
                      float *c, int64_t m, int64_t n, int64_t kdim) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
        float *c0 = c + i * n;
        memset(c0, 0, (size_t)(4 * n) * sizeof *c0);
        for (int64_t k = 0; k < kdim; k++)
            axpy4(c0, c0 + n, c0 + 2 * n, c0 + 3 * n, b + k * bk, a[i * ai + k * ak],
                  a[(i + 1) * ai + k * ak], a[(i + 2) * ai + k * ak], a[(i + 3) * ai + k * ak], n);
    }
    for (; i < m; i++) {
        float *ci = c + i * n;
        memset(ci, 0, (size_t)n * sizeof *ci);
        for (int64_t k = 0; k < kdim; k++) axpy1(ci, b + k * bk, a[i * ai + k * ak], n);
    }
}

/* Rows of output per task: a multiple of gemm_rows' four. */
#define ROWS_PER_TASK 16

typedef struct matmul_job {
    const float *x, *y;
    float *out;
    int64_t m, n, kdim, ai, ak, bk, bj, mx, my;
    int batch_rank;
    int64_t bo[MIL_K_MAX_RANK], sx[MIL_K_MAX_RANK], sy[MIL_K_MAX_RANK];
    int64_t row_blocks;
} matmul_job;

/* One task: rows [r0, r0 + ROWS_PER_TASK) of one batch matrix. */
static void matmul_task(void *ctx, int task, int thread) {
    const matmul_job *j = ctx;
    (void)thread;
    int64_t b = task / j->row_blocks, r0 = (task % j->row_blocks) * ROWS_PER_TASK;
    int64_t rows = j->m - r0 < ROWS_PER_TASK ? j->m - r0 : ROWS_PER_TASK;
    int64_t offx = 0, offy = 0, rest = b;
    for (int i = j->batch_rank - 1; i >= 0; i--) { /* batch index -> broadcast offsets */
        int64_t q = rest % j->bo[i];
        rest /= j->bo[i];
        offx += q * j->sx[i];
        offy += q * j->sy[i];
    }
    const float *a = j->x + offx * j->mx + r0 * j->ai, *bm = j->y + offy * j->my;
    float *c = j->out + b * j->m * j->n + r0 * j->n;
    if (j->bj == 1) {
        gemm_rows(a, j->ai, j->ak, bm, j->bk, c, rows, j->n, j->kdim);
    } else { /* no transposed copy: dot products */
        for (int64_t i = 0; i < rows; i++)
            for (int64_t q = 0; q < j->n; q++) {
                float acc = 0;
                for (int64_t k = 0; k < j->kdim; k++) acc += a[i * j->ai + k * j->ak] * bm[q * j->bj + k * j->bk];
                c[i * j->n + q] = acc;
            }
    }
}

void mil_k_matmul(const float *x, const mil_kshape *xs, int tx, const float *y,
                  const mil_kshape *ys, int ty, float *out, const mil_kshape *os, float *scratch,
                  nc_pool *pool) {
    int rx = xs->rank, ry = ys->rank, ro = os->rank;
    matmul_job j;
    memset(&j, 0, sizeof j);
    j.m = os->d[ro - 2];
    j.n = os->d[ro - 1];
    j.kdim = tx ? xs->d[rx - 2] : xs->d[rx - 1];
    int64_t xr = xs->d[rx - 1], yr = ys->d[ry - 1]; /* row lengths as stored */
    j.ai = tx ? 1 : xr;
    j.ak = tx ? xr : 1;
    j.bk = ty ? 1 : yr;
    j.bj = ty ? yr : 1;
    j.mx = xs->d[rx - 1] * xs->d[rx - 2];
    j.my = ys->d[ry - 1] * ys->d[ry - 2];
    j.x = x;
    j.y = y;
    j.out = out;
    if (ty && scratch) {
        /* every matrix of y transposed once, so that gemm_rows reads rows */
        size_t ny = mil_kshape_count(ys) / (size_t)(j.my ? j.my : 1);
        for (size_t t = 0; t < ny; t++)
            for (int64_t k = 0; k < j.kdim; k++)
                for (int64_t q = 0; q < j.n; q++)
                    scratch[(int64_t)t * j.my + k * j.n + q] = y[(int64_t)t * j.my + q * yr + k];
        j.y = scratch;
        j.bk = j.n;
        j.bj = 1;
    }
    mil_kshape bo = {ro - 2, {0}}, bx = {rx - 2, {0}}, by = {ry - 2, {0}};
    for (int i = 0; i < ro - 2; i++) bo.d[i] = j.bo[i] = os->d[i];
    for (int i = 0; i < rx - 2; i++) bx.d[i] = xs->d[i];
    for (int i = 0; i < ry - 2; i++) by.d[i] = ys->d[i];
    mil_kshape_bcast_strides(&bx, &bo, j.sx);
    mil_kshape_bcast_strides(&by, &bo, j.sy);
    j.batch_rank = bo.rank;
    j.row_blocks = (j.m + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
    size_t tasks = mil_kshape_count(&bo) * (size_t)j.row_blocks;
    if (tasks == 0) return;
    nc_pool_for(tasks > 1 ? pool : NULL, (int)tasks, matmul_task, &j);
}

typedef struct linear_job {
    const float *x, *w, *bias;
    float *out;
    size_t rows, d_in, d_out;
} linear_job;

#define LINEAR_OUTS_PER_TASK 64

static void linear_task(void *ctx, int task, int thread) {
    const linear_job *j = ctx;
    (void)thread;
    size_t o0 = (size_t)task * LINEAR_OUTS_PER_TASK;
    size_t o1 = o0 + LINEAR_OUTS_PER_TASK < j->d_out ? o0 + LINEAR_OUTS_PER_TASK : j->d_out;
    for (size_t r = 0; r < j->rows; r++) {
        const float *xr = j->x + r * j->d_in;
        for (size_t o = o0; o < o1; o++) {
            const float *wo = j->w + o * j->d_in;
            float acc = 0;
            for (size_t i = 0; i < j->d_in; i++) acc += xr[i] * wo[i];
            j->out[r * j->d_out + o] = acc + (j->bias ? j->bias[o] : 0.0f);
        }
    }
}

void mil_k_linear(const float *x, size_t rows, size_t d_in, const float *w, const float *bias,
                  size_t d_out, float *out, nc_pool *pool) {
    linear_job j = {x, w, bias, out, rows, d_in, d_out};
    size_t tasks = (d_out + LINEAR_OUTS_PER_TASK - 1) / LINEAR_OUTS_PER_TASK;
    if (rows && tasks) nc_pool_for(tasks > 1 ? pool : NULL, (int)tasks, linear_task, &j);
}

typedef struct conv_job {
    const mil_kconv *c;
    const float *x, *w, *bias;
    float *out;
    int64_t co_blocks;
} conv_job;

/* 1x1 kernel, unit stride, no padding: per group the [Cout_g x Cin_g]
 * weight matrix times the [Cin_g x S] activations; a task is one block of
 * output channels of one batch item. */
static void conv_1x1_task(void *ctx, int task, int thread) {
    const conv_job *j = ctx;
    const mil_kconv *c = j->c;
    (void)thread;
    int64_t s = c->in[0] * c->in[1] * c->in[2];
    int64_t cig = c->c_in / c->groups, cog = c->c_out / c->groups;
    int64_t nb = task / j->co_blocks, co0 = (task % j->co_blocks) * ROWS_PER_TASK;
    int64_t co1 = co0 + ROWS_PER_TASK < c->c_out ? co0 + ROWS_PER_TASK : c->c_out;
    while (co0 < co1) { /* a block may straddle groups */
        int64_t g = co0 / cog, end = (g + 1) * cog < co1 ? (g + 1) * cog : co1;
        float *o = j->out + (nb * c->c_out + co0) * s;
        gemm_rows(j->w + co0 * cig, cig, 1, j->x + (nb * c->c_in + g * cig) * s, s, o, end - co0, s, cig);
        if (j->bias)
            for (int64_t co = co0; co < end; co++)
                for (int64_t q = 0; q < s; q++) o[(co - co0) * s + q] += j->bias[co];
        co0 = end;
    }
}

/* Any kernel: a task is one output channel of one batch item. */
static void conv_task(void *ctx, int task, int thread) {
    const conv_job *j = ctx;
    const mil_kconv *c = j->c;
    (void)thread;
    const int64_t *in = c->in, *k = c->k, *os = c->out;
    int64_t in_sp = in[0] * in[1] * in[2], out_sp = os[0] * os[1] * os[2];
    int64_t k_sp = k[0] * k[1] * k[2];
    int64_t cig = c->c_in / c->groups, cog = c->c_out / c->groups;
    int64_t nb = task / c->c_out, co = task % c->c_out, g = co / cog;
    float *o = j->out + (nb * c->c_out + co) * out_sp;
    for (int64_t q = 0; q < out_sp; q++) o[q] = 0.0f;
    for (int64_t ci = 0; ci < cig; ci++) {
        const float *xi = j->x + (nb * c->c_in + g * cig + ci) * in_sp;
        const float *wk = j->w + (co * cig + ci) * k_sp;
        for (int64_t k0 = 0; k0 < k[0]; k0++)
            for (int64_t k1 = 0; k1 < k[1]; k1++)
                for (int64_t k2 = 0; k2 < k[2]; k2++) {
                    float wv = wk[(k0 * k[1] + k1) * k[2] + k2];
                    for (int64_t o0 = 0; o0 < os[0]; o0++) {
                        int64_t i0 = o0 * c->stride[0] - c->pad_begin[0] + k0 * c->dilation[0];
                        if (i0 < 0 || i0 >= in[0]) continue;
                        for (int64_t o1 = 0; o1 < os[1]; o1++) {
                            int64_t i1 = o1 * c->stride[1] - c->pad_begin[1] + k1 * c->dilation[1];
                            if (i1 < 0 || i1 >= in[1]) continue;
                            const float *xrow = xi + (i0 * in[1] + i1) * in[2];
                            float *orow = o + (o0 * os[1] + o1) * os[2];
                            for (int64_t o2 = 0; o2 < os[2]; o2++) {
                                int64_t i2 = o2 * c->stride[2] - c->pad_begin[2] + k2 * c->dilation[2];
                                if (i2 >= 0 && i2 < in[2]) orow[o2] += wv * xrow[i2];
                            }
                        }
                    }
                }
    }
    if (j->bias)
        for (int64_t q = 0; q < out_sp; q++) o[q] += j->bias[co];
}

void mil_k_conv(const mil_kconv *c, const float *x, const float *w, const float *bias, float *out,
                nc_pool *pool) {
    int is_1x1 = 1;
    for (int i = 0; i < 3; i++)
        if (c->k[i] != 1 || c->stride[i] != 1 || c->pad_begin[i] != 0 || c->out[i] != c->in[i])
            is_1x1 = 0;
    conv_job j = {c, x, w, bias, out, (c->c_out + ROWS_PER_TASK - 1) / ROWS_PER_TASK};
    int64_t tasks = c->batch * (is_1x1 ? j.co_blocks : c->c_out);
    if (tasks > 0) nc_pool_for(tasks > 1 ? pool : NULL, (int)tasks, is_1x1 ? conv_1x1_task : conv_task, &j);
}
