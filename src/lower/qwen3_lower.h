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

#include "lower/lower_ops.h"
#include "models/qwen3.h"

#define LOWER_HEAD_SEQ 32         /* the head runs one token, padded to 32 columns */
#define LOWER_MAX_HEAD_ROWS 65536 /* ANE dimension limit (docs/ane-rules.md) */
/* The default rows per LM-head chunk: the widest conv public runtimes emit
 * (Anemll splits Qwen's head 16 ways, ironmill caps convs at 16,384
 * output channels; docs/lowering.md, "Lowering forms"). */
#define LOWER_HEAD_ROWS_DEFAULT 16384
#define LOWER_MAX_HEAD_CHUNKS 64
#define LOWER_MASK_NEG (-1.0e4) /* finite "minus infinity" of the attention mask */
#define LOWER_MAX_BUCKETS 8
#define LOWER_MAX_CTX 65535 /* uint16 gather indices: one per context position */

/* The four kernels of a layer, in execution order. */
typedef enum lower_kernel {
    LOWER_K_QKV,
    LOWER_K_KV,
    LOWER_K_ATTN,
    LOWER_K_MLP,
    LOWER_N_KERNELS
} lower_kernel;
const char *lower_kernel_name(lower_kernel k); /* "qkv", "kv", "attn", "mlp" */

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

/* The lowering forms that are choices (docs/lowering.md, "Lowering
 * forms"): each a `nectar compile` option, a manifest field (plan.forms)
 * and a probe-profile key. Zero is the default of each. */
typedef enum lower_program_split {
    LOWER_SPLIT_LAYER,    /* one program per layer: every kernel of every bucket (default) */
    LOWER_SPLIT_KERNEL,   /* a program per kernel of a layer, its buckets as functions */
    LOWER_SPLIT_FUNCTION, /* a program per function: one kernel of one bucket */
    LOWER_N_SPLITS
} lower_program_split;
typedef enum lower_head_split {
    LOWER_HEAD_PER_CHUNK, /* a program per LM-head chunk, one output each (default) */
    LOWER_HEAD_ONE,       /* one program, one output per chunk */
    LOWER_N_HEAD_SPLITS
} lower_head_split;
typedef enum lower_kv_update {
    LOWER_KV_ONEHOT, /* spread by a constant one-hot placement matmul, then select (default) */
    LOWER_KV_GATHER, /* spread by a gather of uint16 constant indices, then select */
    LOWER_N_KV_UPDATES
} lower_kv_update;
typedef enum lower_rope_form {
    LOWER_ROPE_CONV,   /* rotate-half as a grouped 1x1 conv, one group per head (default) */
    LOWER_ROPE_MATMUL, /* rotate-half as a matmul broadcast over the heads */
    LOWER_N_ROPE_FORMS
} lower_rope_form;
typedef enum lower_attention_form {
    LOWER_ATTN_BROADCAST, /* q [KV, G, hd, S] against the cache [KV, 1, hd, ctx] (default) */
    LOWER_ATTN_GROUPED,   /* q in (kv head, dim, group) order: matmuls with equal batch dims */
    LOWER_N_ATTN_FORMS
} lower_attention_form;
typedef struct lower_forms {
    lower_program_split program_split;
    lower_head_split head_split;
    lower_kv_update kv_update;
    lower_rope_form rope;
    lower_attention_form attention;
    int head_rows; /* rows per LM-head chunk (0: LOWER_HEAD_ROWS_DEFAULT) */
} lower_forms;
const char *lower_program_split_name(lower_program_split s); /* "layer", "kernel", "function" */
const char *lower_head_split_name(lower_head_split s);       /* "per-chunk", "one" */
/* The value of a name (-1: none). */
int lower_program_split_parse(const char *name);
int lower_head_split_parse(const char *name);
const char *lower_kv_update_name(lower_kv_update k); /* "onehot", "gather" */
int lower_kv_update_parse(const char *name);
const char *lower_rope_form_name(lower_rope_form r); /* "conv", "matmul" */
int lower_rope_form_parse(const char *name);
const char *lower_attention_form_name(lower_attention_form a); /* "broadcast", "grouped" */
int lower_attention_form_parse(const char *name);
/* The grouped attention form's order of q's channels, (kv head, dim,
 * group) instead of (kv head, group, dim): permutes q_proj's rows (rows =
 * 1) or o_proj's columns (rows = 0) of w [H*hd, D] / [D, H*hd] in place
 * (fp16 data, before palettization). */
nc_status lower_qwen3_group_order(const qwen3_config *c, lower_weight *w, int rows, nc_error *err);

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
} lower_plan;

/* The KV length of a sliding-window layer: slot p mod W holds position p,
 * so W is a multiple of every bucket (the column rule places the token of
 * position p in column p mod S of each), and a chunk of up to s_max tokens
 * never overwrites a key its own earliest token still sees: W >=
 * sliding_window + s_max - 1, rounded up to a multiple of s_max; ctx when
 * that is not shorter (docs/lowering.md, "Other families"). */
int lower_qwen3_window(const qwen3_config *c, int ctx, int s_max);

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

#endif
