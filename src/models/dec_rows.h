/* What the CPU decoders share between their matrix products (Qwen3 and
 * Qwen3.5): the input rows of the next products with the model's scratch
 * attached, one pass per row for residual add + RMSNorm (or the SiLU gate)
 * that also quantizes the row for int8 matrices while it is in L1, and the
 * SiLU-gated MLP block with its residual. */
#ifndef NC_MODELS_DEC_ROWS_H
#define NC_MODELS_DEC_ROWS_H

#include "base/pool.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_scratch.h"

/* A model's pool, kernel table and activation scratch (int8 copies sized
 * for its widest input, prompt panels). */
typedef struct dec_ctx {
    nc_pool *pool;
    const cpu_kernels *kern;
    int8_t *xq;
    float *xs;
    const cpu_prompt_scratch *prompt;
} dec_ctx;

/* The input rows of the next matrix products. */
cpu_act dec_act_rows(const dec_ctx *d, const float *x, size_t ldx, int n, int k);
/* The same for rows that the next dec_row_steps writes, quantized on the way
 * when one of the `count` matrices reading them reads int8 blocks. */
cpu_act dec_act_rows_q(const dec_ctx *d, const float *x, int n, int k, const cpu_mat *const *reads,
                       int count);

/* One pass over each row: optionally x += add (the residual), then
 * out = rmsnorm(x) (norm set) or out = silu(out) * mul (mul set), then out's
 * int8 blocks when act->q is set. */
typedef struct dec_row_step {
    float *x;          /* residual rows (norm) */
    const float *add;  /* NULL: no residual add; may be out (read first) */
    const float *norm; /* RMSNorm weight; NULL: SiLU-gate instead */
    float *out;        /* [n, width] */
    const float *mul;  /* the up rows (SiLU gate) */
    int width;
    float eps;
    cpu_act *act;
} dec_row_step;

void dec_row_steps(const dec_ctx *d, dec_row_step *r, int n);

/* The MLP sub-block over n rows of width d: x += add (the attention
 * output), then x += down(silu(gate(rmsnorm(x))) * up(rmsnorm(x))).
 * xb [n, d], hb and hb2 [n, ff] are scratch; add may be xb. */
typedef struct dec_mlp {
    const float *norm;
    const cpu_mat *gate, *up, *down;
    float eps;
} dec_mlp;

void dec_mlp_rows(const dec_ctx *d, const dec_mlp *mlp, float *x, const float *add, float *xb,
                  float *hb, float *hb2, int n);

#endif
