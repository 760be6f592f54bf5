/* ModernBERT-family encoders as one ANE program: every encoder layer and the
 * final norm in [B, C, 1, L] layout, one function per (batch, sequence)
 * shape, all functions sharing one weight.bin. The host keeps the token
 * embedding, the embedding LayerNorm and the head (docs/encoders-ane.md).
 *
 *   encoder_b<B>_s<L>: x [B, D, 1, L], mask_global [B, L, 1, L]
 *                      (+ mask_local [B, L, 1, L] when the window bites)
 *                      -> hidden [B, D, 1, L]
 *
 * Masks are additive fp16 (0 or -1e4), laid out [b, key, 0, query]. */
#ifndef NC_LOWER_MODERNBERT_LOWER_H
#define NC_LOWER_MODERNBERT_LOWER_H

#include "bundle/bundle_forms.h"
#include "lower/lower_ops.h"
#include "models/modernbert.h"

#define MB_LOWER_MASK_NEG (-1.0e4) /* finite "minus infinity": HF's finfo.min overflows fp16 */

/* Switches of the lowering. The two `wrong_*` ones build a deliberately
 * NON-equivalent graph so tests can prove the parity gate catches it; they
 * are never set by `nectar compile`. */
typedef struct mb_lower_options {
    int gelu_op;            /* 1: MIL `gelu` EXACT (flagged by the checker); 0: erf written out */
    int no_concat;          /* 1: no `concat` (ane-concat): Wo applied per head, summed */
    int wrong_softmax_axis; /* test only: softmax over the query axis (3) */
    int wrong_rope_across_heads; /* test only: rotate-half over all D channels at once */
    /* Layers placed after the final norm in the same function (the decision
     * model's type addition and head layers): append(user, b, B, L, hidden,
     * mask_global) returns the function's output, which must be named
     * "hidden"; the final norm's output is then named "encoder_out". It is
     * first called with hidden NULL after the encoder's inputs, to declare
     * its own (MIL inputs precede every op; the result is ignored). NULL:
     * the encoder alone. */
    mil_var *(*append)(void *user, mil_builder *b, int B, int L, mil_var *hidden,
                       mil_var *mask_global);
    void *append_user;
} mb_lower_options;

/* fp16 weights of one encoder layer, [cout, cin, 1, 1] for the convs and
 * [1, D, 1, 1] for the norms; attn_norm.data is NULL for layer 0 (HF's
 * nn.Identity). */
typedef struct mb_layer_weights {
    lower_weight attn_norm, wqkv, wo, mlp_norm, wi, wo_mlp;
    lower_weight *wo_heads; /* no_concat only: Wo's input columns of each head, [D, hd, 1, 1] */
} mb_layer_weights;

typedef struct mb_encoder_weights {
    mb_layer_weights *layers; /* num_hidden_layers */
    lower_weight final_norm;
    lower_weight rot_head; /* rotate-half per head [hd, hd, 1, 1] (lower_rope_matrix) */
    lower_weight rot_all;  /* wrong_rope_across_heads only: [D, D, 1, 1] */
} mb_encoder_weights;

/* Fills ranks and dims of every weight from the config (data left alone;
 * wo_heads, when allocated, included). */
void mb_lower_shapes(const modernbert_config *c, mb_encoder_weights *w);

/* Name of the variable holding layer l's output (before the final norm) in
 * every function: the interpreter reads it for per-layer parity. */
void mb_lower_layer_var(char *buf, size_t cap, int layer);

/* 1 when a (batch, seq) function needs its own mask_local input: some layer
 * is local and the band |q - k| <= window/2 excludes a pair inside seq. */
int mb_lower_needs_local_mask(const modernbert_config *c, int seq);

/* LayerNorm over channels (axis 1, size D) without bias, population
 * variance, in the original order (center, variance, normalise, scale by
 * weight w), computed on x / a with eps / a^2 where a = max|x| per column:
 * the same function for any a > 0, but no square can overflow fp16
 * (|x / a| <= 1). Ops are named prefix_*, the result out_name (NULL:
 * prefix_out). */
mil_var *mb_lower_layer_norm(mil_builder *b, const char *prefix, mil_var *x, int64_t D, double eps,
                             mil_var *w, const char *out_name);

/* One head's attention: q (already scaled), k, v [B, hd, 1, L] and an
 * additive mask [B, L, 1, L] laid out [b, key, 0, query] -> [B, hd, 1, L],
 * the softmax over the key axis (axis 3 only for the wrong_softmax_axis
 * test). Ops are named prefix_*. */
mil_var *mb_lower_head_attention(mil_builder *b, const char *prefix, int B, int L, int hd,
                                 mil_var *q, mil_var *k, mil_var *v, mil_var *mask,
                                 int softmax_axis);

/* Exact GELU written out with erf, 0.5 x (1 + erf(x / sqrt 2)) (the `gelu`
 * op is flagged ane-gelu). Ops are named prefix_*. */
mil_var *mb_lower_gelu_erf(mil_builder *b, const char *prefix, mil_var *x);

/* Builds the encoder program into dir (dir/weights/weight.bin) with one
 * function per (batches[i], seqs[j]); checked with the ANE rules (zero
 * errors) before it is returned. */
nc_status mb_lower_encoder_program(const modernbert_config *c, mb_encoder_weights *w,
                                   const int *batches, int n_batches, const int *seqs, int n_seqs,
                                   const mb_lower_options *opt, const char *dir, mil_program **out,
                                   nc_error *err);

#endif
