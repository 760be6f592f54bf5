/* Matrix kernels of the MIL interpreter: matmul (transpose flags, batch
 * broadcasting), linear and N-d convolution (groups, stride, padding,
 * dilation). All accumulate in fp32, as the ANE's MAC arrays do; the 1x1
 * convolution (the ANE's linear layer) has its own fast loop. */
#include <string.h>

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

/* C = A·B for B(k,j) = b[k*bk + j*bj]: rows of B contiguous go straight to
 * gemm_rows; otherwise B is first copied transposed into scratch (K*N
 * floats) when there is one, else dot products. */
static void gemm_strided(const float *a, int64_t ai, int64_t ak, const float *b, int64_t bk,
                         int64_t bj, float *c, int64_t m, int64_t n, int64_t kdim, float *scratch) {
    if (bj == 1) {
        gemm_rows(a, ai, ak, b, bk, c, m, n, kdim);
    } else if (scratch) {
        for (int64_t k = 0; k < kdim; k++)
            for (int64_t j = 0; j < n; j++) scratch[k * n + j] = b[k * bk + j * bj];
        gemm_rows(a, ai, ak, scratch, n, c, m, n, kdim);
    } else {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float acc = 0;
                const float *bcol = b + j * bj;
                for (int64_t k = 0; k < kdim; k++) acc += a[i * ai + k * ak] * bcol[k * bk];
                c[i * n + j] = acc;
            }
    }
}

void mil_k_matmul(const float *x, const mil_kshape *xs, int tx, const float *y,
                  const mil_kshape *ys, int ty, float *out, const mil_kshape *os, float *scratch) {
    int rx = xs->rank, ry = ys->rank, ro = os->rank;
    int64_t m = os->d[ro - 2], n = os->d[ro - 1];
    int64_t kdim = tx ? xs->d[rx - 2] : xs->d[rx - 1];
    /* element strides inside one matrix */
    int64_t xr = xs->d[rx - 1]; /* row length of x as stored */
    int64_t yr = ys->d[ry - 1];
    int64_t ai = tx ? 1 : xr, ak = tx ? xr : 1;
    int64_t bk = ty ? 1 : yr, bj = ty ? yr : 1;
    /* batch shapes: broadcast strides in matrices */
    mil_kshape bo = {ro - 2, {0}}, bx = {rx - 2, {0}}, by = {ry - 2, {0}};
    for (int i = 0; i < ro - 2; i++) bo.d[i] = os->d[i];
    for (int i = 0; i < rx - 2; i++) bx.d[i] = xs->d[i];
    for (int i = 0; i < ry - 2; i++) by.d[i] = ys->d[i];
    int64_t sx[MIL_K_MAX_RANK], sy[MIL_K_MAX_RANK], idx[MIL_K_MAX_RANK] = {0};
    mil_kshape_bcast_strides(&bx, &bo, sx);
    mil_kshape_bcast_strides(&by, &bo, sy);
    size_t nb = mil_kshape_count(&bo);
    int64_t mx = xs->d[rx - 1] * xs->d[rx - 2], my = ys->d[ry - 1] * ys->d[ry - 2];
    int64_t offx = 0, offy = 0;
    for (size_t b = 0; b < nb; b++) {
        gemm_strided(x + offx * mx, ai, ak, y + offy * my, bk, bj, out + (int64_t)b * m * n, m,
                     n, kdim, scratch);
        for (int i = bo.rank - 1; i >= 0; i--) {
            idx[i]++;
            offx += sx[i];
            offy += sy[i];
            if (idx[i] < bo.d[i]) break;
            offx -= sx[i] * bo.d[i];
            offy -= sy[i] * bo.d[i];
            idx[i] = 0;
        }
    }
}

void mil_k_linear(const float *x, size_t rows, size_t d_in, const float *w, const float *bias,
                  size_t d_out, float *out) {
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * d_in;
        for (size_t o = 0; o < d_out; o++) {
            const float *wo = w + o * d_in;
            float acc = 0;
            for (size_t i = 0; i < d_in; i++) acc += xr[i] * wo[i];
            out[r * d_out + o] = acc + (bias ? bias[o] : 0.0f);
        }
    }
}

/* 1x1 kernel, unit stride, no padding: per group the [Cout_g x Cin_g]
 * weight matrix times the [Cin_g x S] activations. */
static void conv_1x1(const mil_kconv *c, const float *x, const float *w, const float *bias,
                     float *out) {
    int64_t s = c->in[0] * c->in[1] * c->in[2];
    int64_t cig = c->c_in / c->groups, cog = c->c_out / c->groups;
    for (int64_t nb = 0; nb < c->batch; nb++)
        for (int64_t g = 0; g < c->groups; g++) {
            float *o = out + (nb * c->c_out + g * cog) * s;
            gemm_rows(w + g * cog * cig, cig, 1, x + (nb * c->c_in + g * cig) * s, s, o, cog, s, cig);
            if (bias)
                for (int64_t co = 0; co < cog; co++)
                    for (int64_t j = 0; j < s; j++) o[co * s + j] += bias[g * cog + co];
        }
}

void mil_k_conv(const mil_kconv *c, const float *x, const float *w, const float *bias,
                float *out) {
    int is_1x1 = 1;
    for (int i = 0; i < 3; i++)
        if (c->k[i] != 1 || c->stride[i] != 1 || c->pad_begin[i] != 0 || c->out[i] != c->in[i])
            is_1x1 = 0;
    if (is_1x1) {
        conv_1x1(c, x, w, bias, out);
        return;
    }
    const int64_t *in = c->in, *k = c->k, *os = c->out;
    int64_t in_sp = in[0] * in[1] * in[2], out_sp = os[0] * os[1] * os[2];
    int64_t k_sp = k[0] * k[1] * k[2];
    int64_t cig = c->c_in / c->groups, cog = c->c_out / c->groups;
    for (int64_t nb = 0; nb < c->batch; nb++)
        for (int64_t co = 0; co < c->c_out; co++) {
            int64_t g = co / cog;
            float *o = out + (nb * c->c_out + co) * out_sp;
            for (int64_t j = 0; j < out_sp; j++) o[j] = 0.0f;
            for (int64_t ci = 0; ci < cig; ci++) {
                const float *xi = x + (nb * c->c_in + g * cig + ci) * in_sp;
                const float *wk = w + (co * cig + ci) * k_sp;
                for (int64_t k0 = 0; k0 < k[0]; k0++)
                    for (int64_t k1 = 0; k1 < k[1]; k1++)
                        for (int64_t k2 = 0; k2 < k[2]; k2++) {
                            float wv = wk[(k0 * k[1] + k1) * k[2] + k2];
                            for (int64_t o0 = 0; o0 < os[0]; o0++) {
                                int64_t i0 = o0 * c->stride[0] - c->pad_begin[0] +
                                             k0 * c->dilation[0];
                                if (i0 < 0 || i0 >= in[0]) continue;
                                for (int64_t o1 = 0; o1 < os[1]; o1++) {
                                    int64_t i1 = o1 * c->stride[1] - c->pad_begin[1] +
                                                 k1 * c->dilation[1];
                                    if (i1 < 0 || i1 >= in[1]) continue;
                                    const float *xrow = xi + (i0 * in[1] + i1) * in[2];
                                    float *orow = o + (o0 * os[1] + o1) * os[2];
                                    for (int64_t o2 = 0; o2 < os[2]; o2++) {
                                        int64_t i2 = o2 * c->stride[2] - c->pad_begin[2] +
                                                     k2 * c->dilation[2];
                                        if (i2 >= 0 && i2 < in[2]) orow[o2] += wv * xrow[i2];
                                    }
                                }
                            }
                        }
            }
            if (bias)
                for (int64_t j = 0; j < out_sp; j++) o[j] += bias[co];
        }
}
