/* What the CPU decoders share between their matrix products (Qwen3 and
 * Qwen3.5): the input rows of the next products with the model's scratch
 * attached, one pass per row for residual add + RMSNorm (or the SiLU gate)
 * that also quantizes the row for int8 matrices while it is in L1, the
 * SiLU-gated MLP block with its residual, the final norm + LM head over the
 * rows that want logits, and the checks of a batch item's tokens. */
#ifndef NC_MODELS_DEC_ROWS_H
#define NC_MODELS_DEC_ROWS_H

#include "base/error.h"
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
 * out = rmsnorm(x) (norm set) or out = act(out) * mul (mul set; act SiLU,
 * or GELU-tanh when gelu_tanh), then out's int8 blocks when act->q is
 * set. */
typedef struct dec_row_step {
    float *x;          /* residual rows (norm) */
    const float *add;  /* NULL: no residual add; may be out (read first) */
    const float *norm; /* RMSNorm weight; NULL: SiLU-gate instead */
    float *out;        /* [n, width] */
    const float *mul;  /* the up rows (SiLU gate) */
    int width;
    float eps;
    cpu_act *act;
    int gelu_tanh; /* the gate's activation is GELU-tanh (Gemma), not SiLU */
} dec_row_step;

void dec_row_steps(const dec_ctx *d, dec_row_step *r, int n);

/* The MLP sub-block over n rows of width d: x += add (the attention
 * output), then x += down(silu(gate(rmsnorm(x))) * up(rmsnorm(x))), with
 * GELU-tanh for SiLU and the block's output RMSNormed by post_norm before
 * its add where set (Gemma 3). xb [n, d], hb and hb2 [n, ff] are scratch;
 * add may be xb. */
typedef struct dec_mlp {
    const float *norm;
    const cpu_mat *gate, *up, *down;
    float eps;
    int gelu_tanh;
    const float *post_norm; /* NULL: none */
} dec_mlp;

void dec_mlp_rows(const dec_ctx *d, const dec_mlp *mlp, float *x, const float *add, float *xb,
                  float *hb, float *hb2, int n);

/* x [n, width] = rmsnorm(x) by w, row by row in place. */
void dec_norm_rows(const dec_ctx *d, float *x, int n, int width, const float *w, float eps);

/* Rows through the LM head per matrix product. */
#define DEC_LOGIT_ROWS 16

/* The final norm and LM head over the n rows x [n, width] whose dst[i] is
 * set: dst[i][vocab] = lm_head(rmsnorm(x_i)), then softcap * tanh(logit /
 * softcap) where softcap > 0 (Gemma's final_logit_softcapping), up to
 * DEC_LOGIT_ROWS rows per product. xb [DEC_LOGIT_ROWS, width] and logits
 * [DEC_LOGIT_ROWS, vocab] are scratch. */
typedef struct dec_head {
    const float *norm;
    const cpu_mat *lm_head;
    float eps;
    int width, vocab;
    float softcap; /* 0: none */
} dec_head;

void dec_head_rows(const dec_ctx *d, const dec_head *h, const float *x, float *const *dst, int n,
                   float *xb, float *logits);

/* A batch item's n new tokens on a sequence holding pos of ctx: they fit,
 * and every id is in the vocabulary (one line each: context full, the id
 * and its index). */
nc_status dec_check_tokens(const int32_t *tokens, int n, int pos, int ctx, int vocab,
                           nc_error *err);

#endif
