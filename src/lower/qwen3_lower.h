/* Qwen3 as ANE programs: one MIL program per decoder layer holding four
 * kernels (functions) per sequence bucket, and one program for the final
 * norm + LM head. Activations are [1, C, 1, S] fp16; the KV cache of a
 * layer is [1, kv_heads * head_dim, 1, ctx] fp16, an explicit input and
 * output owned by the host. docs/lowering.md describes every I/O.
 *
 *   qkv_sS : x, rope_cos, rope_sin         -> q, k_new, v_new
 *   kv_sS  : k_cache, v_cache, k_new, v_new, kv_write -> k_cache_out, v_cache_out
 *   attn_sS: x, q, k_cache, v_cache, attn_mask          -> x_out
 *   mlp_sS : x                                            -> x_out
 *   head_s32 (head program): x -> logits_0, logits_1, ... (<= 65,536 rows each)
 *
 * Column c of an S-wide function holds the token whose position p has
 * p mod S == c, so the KV update is a gather with CONSTANT uint16 indices
 * (j mod S; never int32, which the ANE compiler refuses for indices)
 * followed by a select on the host's write mask. */
#ifndef NC_LOWER_QWEN3_LOWER_H
#define NC_LOWER_QWEN3_LOWER_H

#include "bundle/bundle_forms.h"
#include "lower/lower_ops.h"
#include "models/qwen3.h"

#define LOWER_MAX_CTX 65535 /* uint16 gather indices: one per context position */


/* The fp16 weights of one layer (shapes set by lower_qwen3_layer_shapes). */
typedef struct lower_layer_weights {
    lower_weight q, k, v, o, gate, up, down; /* [cout, cin, 1, 1] */
    lower_weight attn_norm, mlp_norm;        /* [1, D, 1, 1] */
    lower_weight q_norm, k_norm;             /* [1, 1, hd, 1] */
    /* Qwen3.5's gated attention: the rows of q_proj that make each head's
     * output gate, [H * hd, D, 1, 1]; data NULL for Qwen3. When set, qkv
     * also outputs `gate` and attn multiplies by sigmoid(gate) before o_proj. */
    lower_weight out_gate;
    /* Gemma 3's sandwich norms, [1, D, 1, 1]: the attention output and the
     * MLP output are RMSNormed before their residual adds; data NULL for
     * the others */
    lower_weight post_attn_norm, post_mlp_norm;
} lower_layer_weights;

/* Fills every weight's rank and dims from the config (data left as is). */
void lower_qwen3_layer_shapes(const qwen3_config *c, lower_layer_weights *w);

/* 1 for a kernels-per-layer count the lowering writes (1..4). */
int lower_kernels_per_layer_valid(int kpl);

/* Fails with one line when ctx does not fit the uint16 gather indices. */
nc_status lower_qwen3_check_ctx(int ctx, nc_error *err);

/* The grouped attention form's order of q's channels, (kv head, dim,
 * group) instead of (kv head, group, dim): permutes q_proj's rows (rows =
 * 1) or o_proj's columns (rows = 0) of w [H*hd, D] / [D, H*hd] in place
 * (fp16 data, before palettization). */
nc_status lower_qwen3_group_order(const qwen3_config *c, lower_weight *w, int rows, nc_error *err);
/* The same from src into dst ([H*hd, other] rows = 1, [other, H*hd] rows =
 * 0); inverse: from the grouped order back to the checkpoint's (a bundle's
 * weights read back: engine/bundle_cpu_layer.c). */
void lower_qwen3_group_copy(const qwen3_config *c, const nc_fp16 *src, nc_fp16 *dst,
                            int64_t other, int rows, int inverse);

typedef struct lower_plan {
    const qwen3_config *cfg;
    int ctx; /* KV cache length, a multiple of 32 */
    int n_seqs;
    int seqs[LOWER_MAX_BUCKETS]; /* sequence buckets, ascending, multiples of 32, <= ctx */
    int kernels_per_layer;       /* 4: qkv, kv, attn, mlp (0 = 4); 3: qkv, kvattn, mlp;
                                    2: qkva, mlp; 1: layer (lower_qwen3_layer_program) */
    lower_forms forms;
    /* a sliding-window layer (Gemma 3): its host inputs are rope_cos_local,
     * rope_sin_local, attn_mask_local and kv_write_local, and ctx is its
     * window's length (lower_qwen3_window) */
    int local;
    /* the grouped attention over q in the broadcast form's channel order
     * (kv head, group, dim), transposed to (kv head, dim, group) inside
     * attn and its output back, so qkv and o_proj stay as compiled: the
     * relower rung re-lowers an attn kernel alone (engine/bundle_relower.h) */
    int attn_q_by_head;
} lower_plan;

/* Builds the layer program into folder dir (dir/weights/weight.bin is
 * written; the caller prints dir/model.mil). rope is the shared rotate-half
 * matrix weight [1, 1, hd, hd]. Every function passes mil_check_strict
 * with the ANE rules before it is returned. */
nc_status lower_qwen3_layer_program(const lower_plan *p, lower_layer_weights *w, lower_weight *rope,
                                    const char *dir, mil_program **out, nc_error *err);
/* The part of it one program holds under the plan's program split: kernel
 * k (-1: every kernel) of bucket index s (-1: every bucket). Weights are
 * written to this program's own weight.bin (the caller resets each
 * weight's val between programs). */
nc_status lower_qwen3_layer_part(const lower_plan *p, int k, int s, lower_layer_weights *w,
                                 lower_weight *rope, const char *dir, mil_program **out,
                                 nc_error *err);
/* The number of kernels (functions per bucket) of a layer under the plan. */
int lower_qwen3_kernels(const lower_plan *p);
/* Kernel k's name ("qkv", "kvattn", ...). */
const char *lower_qwen3_kernel_name(const lower_plan *p, int k);

/* The mlp_sS kernel of lower_qwen3_layer_program alone, into the function
 * the builder is writing (Qwen3.5's linear-attention layers reuse it). */
void lower_qwen3_mlp_function(mil_builder *b, const lower_plan *p, int S, lower_layer_weights *w);

/* Ends a builder: its first error, or the finished program checked against
 * the ANE rules (mil_check_strict). The builder is freed either way. */
nc_status lower_program_finish(mil_builder *b, mil_program **out, nc_error *err);

/* A head program: final RMSNorm then the LM head in n_chunks 1x1 convs
 * (chunks[i]: [rows_i, D, 1, 1]); function head_s32, outputs
 * logits_<first + i> (a head split into one program per chunk numbers its
 * outputs across the programs). */
nc_status lower_qwen3_head_program(const lower_plan *p, lower_weight *final_norm,
                                   lower_weight *chunks, int n_chunks, int first, const char *dir,
                                   mil_program **out, nc_error *err);
/* The same with every chunk wider than slice_rows (> 0) written as convs
 * over row slices of its weight, concatenated into its one output: for a
 * device that refuses wide convs, re-lowering a head from its bundle
 * (the relower rung, engine/bundle_relower.h). Palettized chunks are not
 * sliced (an error). */
nc_status lower_qwen3_head_program_sliced(const lower_plan *p, lower_weight *final_norm,
                                          lower_weight *chunks, int n_chunks, int first,
                                          int64_t slice_rows, const char *dir, mil_program **out,
                                          nc_error *err);

#endif
