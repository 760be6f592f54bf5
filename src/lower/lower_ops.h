/* Building blocks the Qwen3 lowering writes into MIL functions: RMSNorm
 * reformulated for fp16 (no square can overflow), rotate-half RoPE as a
 * constant matmul, and weights shared by every function of a program (one
 * BLOBFILE in weight.bin, referenced again by each bucket's function). */
#ifndef NC_LOWER_LOWER_OPS_H
#define NC_LOWER_LOWER_OPS_H

#include <stdint.h>

#include "base/half.h"
#include "bundle/bundle_forms.h"
#include "mil/builder.h"

struct lower_palette;

/* A weight written once per program and referenced by later functions:
 * `val` is NULL until the first lower_shared_weight call stores it. With
 * `pal` set (lower_palettize) it is written as indices and tables instead:
 * `val` then holds the indices and `lut_val` the tables. */
typedef struct lower_weight {
    const nc_fp16 *data; /* fp16 bits, caller-owned until the builder finishes */
    int rank;
    int64_t dims[4];
    const mil_value *val;      /* the BLOBFILE (or inline) value once written */
    struct lower_palette *pal; /* caller-owned (free()) */
    const mil_value *lut_val;
} lower_weight;

/* Sets w to rank 4 with dims [d0, d1, d2, d3]. */
void lower_weight_shape4(lower_weight *w, int64_t d0, int64_t d1, int64_t d2, int64_t d3);

/* Forgets the value w was written as (its BLOBFILE in one builder's
 * weight.bin), so that the next program writes it to its own. */
void lower_weight_forget(lower_weight *w);

/* A const op named `name` holding w: written on first use, referenced after;
 * a palettized w becomes a constexpr_lut_to_dense op of that name. */
mil_var *lower_shared_weight(mil_builder *b, const char *name, lower_weight *w);

/* RMSNorm over `axis` (of size d) of fp16 x, times weight `w` (broadcast
 * along that axis), computed so that fp16 never overflows:
 *   m  = max(max|x|, 2^-7)            (per normalised vector)
 *   xs = x / m                        (|xs| <= 1, squares <= 1)
 *   y  = xs * rsqrt(sum(xs^2)/d + (sqrt(eps)/m)^2) * w
 * which equals x * rsqrt(mean(x^2) + eps) * w in real arithmetic for any
 * m > 0. `prefix` names the ops (prefix_max, prefix_scaled, ...). */
mil_var *lower_rmsnorm(mil_builder *b, const char *prefix, mil_var *x, int axis, int64_t d,
                       double eps, mil_var *w);

/* The rotate-half matrix R [1, 1, hd, hd] (fp16 0/+-1) with
 * R x = concat(-x[hd/2:], x[:hd/2]) along the head axis, as a shared weight
 * (malloc'd; the caller frees it once the builder is finished). */
nc_fp16 *lower_rope_matrix(int head_dim);
/* The same rotating only the first rotary_dim (even) dims of each head,
 * as partial rotary (Qwen3.5); rows from rotary_dim on are zero, and the
 * host's cos/sin tables hold 1/0 there so those dims pass unchanged. */
nc_fp16 *lower_rope_matrix_partial(int head_dim, int rotary_dim);

/* e^x for x <= 0 in the given form (lower_exp_form, bundle/bundle_forms.h:
 * sigmoid(x) / sigmoid(-x) = e^x exactly; sigmoid(-x) = 1 - sigmoid(x) is in
 * [1/2, 1) for x <= 0 and rounded once: nothing cancels or overflows); ops named prefix (the result) and prefix_*. */
mil_var *lower_exp_nonpos(mil_builder *b, const char *prefix, mil_var *x, lower_exp_form f);

/* n rounded up to a multiple of 32 under LOWER_PAD_32, else n. */
int lower_matmul_padded(int n, lower_matmul_pad p);

/* q4 [.., hd, S] rotated: q4 * cos + (R q4) * sin, with cos/sin [1, 1, hd, S]. */
mil_var *lower_rope(mil_builder *b, const char *prefix, mil_var *q4, mil_var *rot, mil_var *cos,
                    mil_var *sin);

/* A norm weight stored as w that scales by 1 + w (Gemma 3) folded: adds 1
 * to each of w's fp16 values (its own buffer) in fp32, rounding once. */
void lower_weight_add_one(lower_weight *w);

/* GELU with the tanh approximation (Gemma 3's gelu_pytorch_tanh) written
 * out with mul/add/tanh, as the ANE rules ask (the gelu op is reported to
 * fail on some chips): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The
 * result is named `name`. */
mil_var *lower_gelu_tanh(mil_builder *b, const char *name, mil_var *x);

/* cap * tanh(x / cap) (Gemma 3's final logit softcap), named `name`. */
mil_var *lower_softcap(mil_builder *b, const char *name, mil_var *x, double cap);

#endif
