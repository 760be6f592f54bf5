/* Qwen3.5's linear-attention (Gated DeltaNet) layers as MIL functions. A
 * full-attention layer of Qwen3.5 is a Qwen3 layer program
 * (lower_qwen3_layer_program) with the output gate and a partial rotary
 * matrix; a linear-attention layer is one program holding
 *
 *   step_s32  : x, conv_state, delta_state -> x_out, conv_state_out, delta_state_out
 *   prefill_sS: the same for a chunk of tokens (one per bucket: the unrolled
 *               form below or the chunked form of qwen35_chunk.h)
 *   mlp_sS    : x -> x_out                   (one per bucket, Qwen3's kernel)
 *
 * step_s32 is one token of the recurrent form: the token's activation in
 * column 0 of x [1, D, 1, 32] (the other columns are ignored; x_out holds
 * the result in every column); conv_state [1, C, 1, 32] holds the last K-1
 * conv inputs in columns 0..K-2 (oldest first, zeros after); delta_state
 * [1, nv, dk, dvp] is the delta-rule state. Both states are explicit inputs
 * and outputs owned by the host, like the KV cache. Value heads are padded
 * from dv to dvp (a multiple of 32: the ANE's I/O rows) with zero weight
 * rows, which keeps every padded channel exactly zero; C = 2 nk dk + nv dvp.
 * docs/qwen35.md has the op sequence and its fp16 errors. */
#ifndef NC_LOWER_QWEN35_LOWER_H
#define NC_LOWER_QWEN35_LOWER_H

#include "lower/qwen3_lower.h"
#include "models/qwen35.h"

#define LOWER_STEP_SEQ 32 /* the step's one token padded to 32 columns */

/* The fp16 weights of one linear-attention layer (padded as above). */
typedef struct lower_linear_weights {
    lower_weight attn_norm; /* [1, D, 1, 1], 1 + w */
    lower_weight qkv, z;    /* [C, D, 1, 1], [nv dvp, D, 1, 1] */
    lower_weight b, a;      /* [nv, D, 1, 1] */
    lower_weight conv_prev; /* [1, C, 1, 32]: conv weight of state column k (k < K-1) */
    lower_weight conv_last; /* [1, C, 1, 1]: conv weight of the new input */
    lower_weight neg_a;     /* [1, nv, 1, 1]: -exp(A_log) */
    lower_weight dt_bias;   /* [1, nv, 1, 1] */
    lower_weight gnorm;     /* [1, 1, dvp, 1]: gated RMSNorm weight, zero padded */
    lower_weight out;       /* [D, nv dvp, 1, 1] */
    lower_weight shift;     /* [1, 1, 32, 32]: conv window shift (constant) */
    lower_weight place;     /* [1, 1, 1, 32]: one-hot at column K-2 (constant) */
    /* The forms (set before lower_qwen35_linear_shapes; zero: unpadded key
     * heads and the sigmoid form of exp): dkp, the key head width, dk or
     * dk padded with zero channels to a multiple of 32 (--matmul-pad), so
     * every matmul of the delta rule contracts over a multiple of 32; the
     * padded channels of q, k and the state stay exactly zero. */
    int dkp;
    lower_exp_form exp;
} lower_linear_weights;

/* The padded value head width: dv rounded up to a multiple of 32. */
int lower_qwen35_dvp(const qwen35_config *c);
/* The conv channels with padded value heads (C above). */
int64_t lower_qwen35_conv_channels(const qwen35_config *c);
/* The same with key heads dkp wide (w->dkp; 0: dk). */
int64_t lower_qwen35_conv_channels_padded(const qwen35_config *c, int dkp);
/* The key head width of w (w->dkp, or dk when 0). */
int lower_qwen35_dkp(const qwen35_config *c, const lower_linear_weights *w);

/* Sets every weight's rank and dims (data left as is). */
void lower_qwen35_linear_shapes(const qwen35_config *c, lower_linear_weights *w);

/* The constant shift and place weights for kernel K (malloc'd, caller frees
 * w->shift.data and w->place.data). */
nc_status lower_qwen35_conv_constants(const qwen35_config *c, lower_linear_weights *w,
                                      nc_error *err);

/* Writes step_s32 into the function the builder is writing (its inputs,
 * ops and outputs). */
void lower_qwen35_step_function(mil_builder *b, const qwen35_config *c, lower_linear_weights *w);

/* prefill_sS: the n tokens of a chunk in columns 0..n-1 of x [1, D, 1, S],
 * in order, valid [1, 1, 1, S] 1 there and 0 after (padding leaves the
 * state alone); the states as for the step; conv_pick_state [1, 1, 32, 32]
 * and conv_pick_new [1, 1, S, 32], 0/1 matrices from the host that select
 * the chunk's last K-1 conv inputs as the new window (they depend on n).
 * The projections, conv, norms and gates run over all S columns at once;
 * the delta rule walks the tokens in order inside the function (the
 * recurrent form unrolled, the step's numerics), so a chunk is one
 * dispatch. x_out holds the mixer's result in the same columns. */
void lower_qwen35_prefill_function(mil_builder *b, const qwen35_config *c, lower_linear_weights *w,
                                   int S);

/* The state-free parts of a prefill_sS function, which the unrolled form
 * above and the chunked form (qwen35_chunk.h) share: front declares the
 * inputs and writes RMSNorm, the projections, the conv and its new window,
 * the L2 norms and the gates; finish writes the gated norm, out_proj and
 * the residual and ends the function. Padding columns have beta = g = 0. */
typedef struct lower_q35_prefill {
    mil_var *x, *z, *state, *conv_state_out; /* state: the delta_state input */
    mil_var *q, *k;                          /* [1, nk, dk, S], L2-normed, q * dk^-0.5 */
    mil_var *v;                              /* [1, nv dvp, 1, S] */
    mil_var *beta, *g, *decay;               /* [1, nv, 1, S]: beta, log-decay, exp(g) */
} lower_q35_prefill;

/* 1 when every var was built (else the builder holds the error). */
int lower_qwen35_prefill_front(mil_builder *b, const qwen35_config *c, lower_linear_weights *w,
                               int S, lower_q35_prefill *io);
/* o: the delta rule's outputs [1, nv, dvp, S]; state: the new delta state
 * (any shape of nv dk dvp elements in [1, nv, dk, dvp] order). */
void lower_qwen35_prefill_finish(mil_builder *b, const qwen35_config *c, lower_linear_weights *w,
                                 const lower_q35_prefill *io, int S, mil_var *o, mil_var *state);

/* Which form prefill_sS takes (nectar compile --q35-prefill). */
typedef enum lower_q35_prefill_form {
    LOWER_Q35_PREFILL_CHUNKED = 0, /* the default: qwen35_chunk.h */
    LOWER_Q35_PREFILL_UNROLLED = 1,
} lower_q35_prefill_form;

/* The linear-attention layer program (step_s32, then prefill_sS and mlp_sS per bucket of
 * p; `mlp` holds the layer's MLP weights as Qwen3's) into folder dir;
 * checked against the ANE rules. */
nc_status lower_qwen35_linear_program(const lower_plan *p, const qwen35_config *c,
                                      lower_linear_weights *w, lower_layer_weights *mlp,
                                      lower_q35_prefill_form form, const char *dir,
                                      mil_program **out, nc_error *err);

#endif
