/* Numerical kernels of the MIL interpreter, on plain arrays plus shapes.
 * They know nothing of the IR: the interpreter (interp.c) resolves arguments,
 * computes shapes and calls them. Every element is 4 bytes (float for fp
 * tensors, int32 for int and bool tensors) so data movement is dtype-blind.
 * Float kernels accumulate in fp32; rounding to fp16 is the caller's job
 * (one rounding per MIL op, see docs/mil-interpreter.md). */
#ifndef NC_MIL_INTERP_KERNELS_H
#define NC_MIL_INTERP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"

#define MIL_K_MAX_RANK 8

typedef struct mil_kshape {
    int rank;
    int64_t d[MIL_K_MAX_RANK];
} mil_kshape;

/* Number of elements; SIZE_MAX when the product does not fit. */
size_t mil_kshape_count(const mil_kshape *s);
int mil_kshape_equal(const mil_kshape *a, const mil_kshape *b);
/* Row-major element strides of s. */
void mil_kshape_strides(const mil_kshape *s, int64_t *strides);
/* NumPy broadcasting of a and b into out; 0 when they do not broadcast. */
int mil_kshape_broadcast(const mil_kshape *a, const mil_kshape *b, mil_kshape *out);
/* Strides of `in` seen through broadcasting to `out` (0 on broadcast axes). */
void mil_kshape_bcast_strides(const mil_kshape *in, const mil_kshape *out, int64_t *strides);

/* ---- elementwise ---- */
typedef enum mil_kbin {
    MIL_KB_ADD, MIL_KB_SUB, MIL_KB_MUL, MIL_KB_DIV, MIL_KB_POW, MIL_KB_MAX, MIL_KB_MIN,
    MIL_KB_FLOOR_DIV, MIL_KB_MOD,
    /* comparisons: result is int32 0/1 */
    MIL_KB_EQ, MIL_KB_NE, MIL_KB_LT, MIL_KB_LE, MIL_KB_GT, MIL_KB_GE,
    /* logical, on 0/1 int32 */
    MIL_KB_AND, MIL_KB_OR, MIL_KB_XOR
} mil_kbin;

int mil_kbin_is_compare(mil_kbin op);

/* out = a op b with broadcasting; out has shape os (the broadcast shape).
 * Float operands (compare results are written as int32 into out). */
void mil_k_binary_f32(mil_kbin op, const float *a, const mil_kshape *as, const float *b,
                      const mil_kshape *bs, void *out, const mil_kshape *os);
/* Same on int32 operands (wrapping arithmetic; x/0 gives 0). */
void mil_k_binary_i32(mil_kbin op, const int32_t *a, const mil_kshape *as, const int32_t *b,
                      const mil_kshape *bs, int32_t *out, const mil_kshape *os);

typedef enum mil_kun {
    MIL_KU_SQRT, MIL_KU_RSQRT, MIL_KU_EXP, MIL_KU_EXP2, MIL_KU_LOG, MIL_KU_TANH,
    MIL_KU_SIGMOID, MIL_KU_SILU, MIL_KU_RELU, MIL_KU_GELU_EXACT, MIL_KU_GELU_TANH,
    MIL_KU_GELU_SIGMOID, MIL_KU_ERF, MIL_KU_ABS, MIL_KU_SIGN, MIL_KU_CEIL, MIL_KU_FLOOR,
    MIL_KU_ROUND, MIL_KU_SQUARE, MIL_KU_INVERSE, MIL_KU_SIN, MIL_KU_COS, MIL_KU_CLIP,
    MIL_KU_LEAKY_RELU, MIL_KU_SOFTPLUS, MIL_KU_RELU6, MIL_KU_ATAN, MIL_KU_SOFTSIGN
} mil_kun;

/* out[i] = f(x[i]); p0/p1 are epsilon (rsqrt, inverse, log), alpha/beta (clip,
 * leaky_relu). */
void mil_k_unary_f32(mil_kun op, const float *x, float *out, size_t n, float p0, float p1);

/* out = cond ? a : b with three-way broadcasting to os. */
void mil_k_select(const int32_t *cond, const mil_kshape *cs, const uint32_t *a,
                  const mil_kshape *as, const uint32_t *b, const mil_kshape *bs, uint32_t *out,
                  const mil_kshape *os);

/* Copies x broadcast to os (the "expand" of NumPy). */
void mil_k_broadcast_to(const uint32_t *x, const mil_kshape *xs, uint32_t *out,
                        const mil_kshape *os);

/* ---- linear algebra (fp32 accumulation) ---- */

/* x [..., M, K] (or [..., K, M] when tx), y [..., K, N] (or [..., N, K] when
 * ty), rank >= 2 both (the caller promotes 1-D operands), batch dims
 * broadcast to os [..., M, N]. scratch (as many floats as y, or NULL: slower)
 * holds y transposed when ty. pool: NULL runs serially. */
void mil_k_matmul(const float *x, const mil_kshape *xs, int tx, const float *y,
                  const mil_kshape *ys, int ty, float *out, const mil_kshape *os, float *scratch,
                  nc_pool *pool);

/* out[r, o] = sum_i x[r, i] * w[o, i] + (bias ? bias[o] : 0). */
void mil_k_linear(const float *x, size_t rows, size_t d_in, const float *w, const float *bias,
                  size_t d_out, float *out, nc_pool *pool);

typedef struct mil_kconv {
    int n_spatial;      /* 1..3 */
    int64_t batch, c_in, c_out, groups;
    int64_t in[3];      /* input spatial sizes */
    int64_t k[3];       /* kernel spatial sizes */
    int64_t out[3];     /* output spatial sizes */
    int64_t stride[3], dilation[3], pad_begin[3];
} mil_kconv;

/* x [N, Cin, *in], w [Cout, Cin/groups, *k], bias [Cout] or NULL. */
void mil_k_conv(const mil_kconv *c, const float *x, const float *w, const float *bias, float *out,
                nc_pool *pool);

/* ---- reductions ---- */
typedef enum mil_kred {
    MIL_KR_SUM, MIL_KR_MEAN, MIL_KR_MAX, MIL_KR_MIN, MIL_KR_PROD, MIL_KR_SUM_SQUARE,
    MIL_KR_L1, MIL_KR_L2, MIL_KR_LOG_SUM_EXP, MIL_KR_LOG_SUM, MIL_KR_ARGMAX, MIL_KR_ARGMIN
} mil_kred;

/* Reduces x over the axes set in `mask` (bit i = axis i); out holds the
 * result with those axes removed or kept as 1 (same element order either
 * way). ARGMAX/ARGMIN write int32 indices (one axis only). */
void mil_k_reduce(mil_kred op, const float *x, const mil_kshape *xs, unsigned mask, void *out);
void mil_k_reduce_i32(mil_kred op, const int32_t *x, const mil_kshape *xs, unsigned mask,
                      int32_t *out);

/* Softmax along one axis, max subtracted first (what hardware must do to
 * keep exp in range). */
void mil_k_softmax(const float *x, const mil_kshape *xs, int axis, float *out);

/* (x - mean) / sqrt(var + eps) * gamma + beta over the axes in mask;
 * population variance; gamma/beta (may be NULL) are indexed by the position
 * inside the normalised axes in row-major order. */
void mil_k_layer_norm(const float *x, const mil_kshape *xs, unsigned mask, const float *gamma,
                      const float *beta, float eps, float *out);

/* ---- data movement (4-byte elements) ---- */

void mil_k_transpose(const uint32_t *x, const mil_kshape *xs, const int *perm, uint32_t *out);

/* out[i...] = x[begin + i*stride ...] for the index space `os` (same rank as
 * xs); strides may be negative. */
void mil_k_strided_slice(const uint32_t *x, const mil_kshape *xs, const int64_t *begin,
                         const int64_t *stride, uint32_t *out, const mil_kshape *os);
/* The inverse: writes `upd` (index space us) into out (a copy of x, shape xs)
 * at begin + i*stride. */
void mil_k_strided_assign(uint32_t *out, const mil_kshape *xs, const int64_t *begin,
                          const int64_t *stride, const uint32_t *upd, const mil_kshape *us);

/* Concatenates n tensors along axis (shapes equal elsewhere). interleave:
 * take one slice of each input in turn (all inputs the same shape). */
void mil_k_concat(const uint32_t *const *xs_data, const mil_kshape *xs, int n, int axis,
                  int interleave, uint32_t *out);

/* gather: out shape = x[:axis] + idx[batch_dims:] + x[axis+1:]. Returns -1
 * (and writes nothing further) when an index is out of [-D, D); else 0. */
int mil_k_gather(const uint32_t *x, const mil_kshape *xs, const int32_t *idx,
                 const mil_kshape *is, int axis, int batch_dims, uint32_t *out);
/* gather_along_axis: out shape = idx shape. */
int mil_k_gather_along_axis(const uint32_t *x, const mil_kshape *xs, const int32_t *idx,
                            const mil_kshape *is, int axis, uint32_t *out);

typedef enum mil_kscat {
    MIL_KS_UPDATE, MIL_KS_ADD, MIL_KS_SUB, MIL_KS_MUL, MIL_KS_DIV, MIL_KS_MAX, MIL_KS_MIN
} mil_kscat;
/* scatter: out (already a copy of data, shape ds) receives updates of shape
 * ds[:axis] + is + ds[axis+1:]; is_float selects float or int32 arithmetic.
 * Returns -1 on an out-of-range index. */
int mil_k_scatter(uint32_t *out, const mil_kshape *ds, const int32_t *idx, const mil_kshape *is,
                  const uint32_t *upd, int axis, mil_kscat mode, int is_float);
/* scatter_along_axis: indices and updates share a shape (rank of data). */
int mil_k_scatter_along_axis(uint32_t *out, const mil_kshape *ds, const int32_t *idx,
                             const mil_kshape *is, const uint32_t *upd, int axis,
                             mil_kscat mode, int is_float);

/* scatter_nd: idx [..., K] addresses data[:K]; updates are idx.shape[:-1] +
 * ds[K:]. */
int mil_k_scatter_nd(uint32_t *out, const mil_kshape *ds, const int32_t *idx, const mil_kshape *is,
                     const uint32_t *upd, mil_kscat mode, int is_float);

typedef enum mil_kpad { MIL_KP_CONSTANT, MIL_KP_REFLECT, MIL_KP_REPLICATE } mil_kpad;
/* pad_before/after per axis (full rank). */
void mil_k_pad(const uint32_t *x, const mil_kshape *xs, const int64_t *before, mil_kpad mode,
               uint32_t fill, uint32_t *out, const mil_kshape *os);

void mil_k_tile(const uint32_t *x, const mil_kshape *xs, uint32_t *out, const mil_kshape *os);

/* Keeps element (i, j) of the last two axes when (lower < 0 || i - j <=
 * lower) && (upper < 0 || j - i <= upper), else writes zero. */
void mil_k_band_part(const uint32_t *x, const mil_kshape *xs, int64_t lower, int64_t upper,
                     uint32_t *out);

#endif
