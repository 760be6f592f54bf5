/* What an ANE bundle's manifest records about how its programs were
 * lowered, shared by the lowering that writes a bundle (src/lower) and the
 * hosts that read one (src/engine, src/ane_host): the size limits, the
 * kernel names, the lowering forms (docs/lowering.md, "Lowering forms"),
 * the palettize settings, the fp16 conversion counts and the encoder's
 * function names. The names keep their lower_ prefix: the lowering made
 * them and the manifest spells them the same way. */
#ifndef NC_BUNDLE_BUNDLE_FORMS_H
#define NC_BUNDLE_BUNDLE_FORMS_H

#include <stddef.h>
#include <stdint.h>

#include "mil/dtype.h"

#define LOWER_HEAD_SEQ 32         /* the head runs one token, padded to 32 columns */
#define LOWER_MAX_HEAD_ROWS 65536 /* ANE dimension limit (docs/ane-rules.md) */
/* The default rows per LM-head chunk: the widest conv public runtimes emit
 * (Anemll splits Qwen's head 16 ways, ironmill caps convs at 16,384
 * output channels; docs/lowering.md, "Lowering forms"). */
#define LOWER_HEAD_ROWS_DEFAULT 16384
#define LOWER_MAX_HEAD_CHUNKS 64
#define LOWER_MASK_NEG (-1.0e4) /* finite "minus infinity" of the attention mask (the host writes it) */
#define LOWER_MAX_BUCKETS 8
#define MB_LOWER_MAX_SHAPES 8      /* buckets and batches, each */

/* The KV length of a sliding-window layer (Gemma 3) of window
 * sliding_window: slot p mod W holds position p, so W is a multiple of
 * every bucket (the column rule places the token of position p in column
 * p mod S of each), and a chunk of up to s_max tokens never overwrites a
 * key its own earliest token still sees: W >= sliding_window + s_max - 1,
 * rounded up to a multiple of s_max; ctx when that is not shorter
 * (docs/lowering.md, "Other families"). */
int lower_qwen3_window(int sliding_window, int ctx, int s_max);


/* The four kernels of a layer, in execution order. */
typedef enum lower_kernel {
    LOWER_K_QKV,
    LOWER_K_KV,
    LOWER_K_ATTN,
    LOWER_K_MLP,
    LOWER_N_KERNELS
} lower_kernel;
const char *lower_kernel_name(lower_kernel k); /* "qkv", "kv", "attn", "mlp" */

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
    LOWER_KV_HOST,   /* no update op: the host writes k_new/v_new into its cache between
                        qkv and attn (kernels qkv, attn, mlp; kernels per layer 4 or 3) */
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
/* How exp is written (nectar compile --exp): the exp op, on which sources
 * disagree (ane-exp), or, for the non-positive arguments the lowerings only
 * ever exponentiate, as sigmoid(x) / sigmoid(-x) (lower_exp_nonpos). */
typedef enum lower_exp_form {
    LOWER_EXP_SIGMOID, /* the default */
    LOWER_EXP_OP,
    LOWER_N_EXP_FORMS
} lower_exp_form;
const char *lower_exp_form_name(lower_exp_form f); /* "sigmoid", "op" */
int lower_exp_form_parse(const char *name);        /* -1: none */
/* Contracted axes the lowering controls (Qwen3.5's linear key heads, the
 * encoders' q/k heads) padded with zeros to a multiple of 32 (the
 * ane-matmul-inner rule; nectar compile --matmul-pad), or left as they are. */
typedef enum lower_matmul_pad {
    LOWER_PAD_32, /* the default */
    LOWER_PAD_NONE,
    LOWER_N_PADS
} lower_matmul_pad;
const char *lower_matmul_pad_name(lower_matmul_pad p); /* "32", "none" */
int lower_matmul_pad_parse(const char *name);          /* -1: none */
/* How a layer's kernels take the sequence buckets (nectar compile
 * --bucket-form): one function per kernel and bucket, or one function per
 * kernel whose inputs are an EnumeratedShapes set of the buckets (`?` for
 * S inside; docs/lowering.md, "The enumerated bucket form"). */
typedef enum lower_bucket_form {
    LOWER_BUCKETS_PER_BUCKET, /* the default */
    LOWER_BUCKETS_ENUMERATED,
    LOWER_N_BUCKET_FORMS
} lower_bucket_form;
const char *lower_bucket_form_name(lower_bucket_form f); /* "per-bucket", "enumerated" */
int lower_bucket_form_parse(const char *name);          /* -1: none */
typedef struct lower_forms {
    lower_program_split program_split;
    lower_head_split head_split;
    lower_kv_update kv_update;
    lower_rope_form rope;
    lower_attention_form attention;
    lower_exp_form exp;          /* Qwen3.5's linear layers */
    lower_matmul_pad matmul_pad; /* Qwen3.5's linear key heads */
    int head_rows; /* rows per LM-head chunk (0: LOWER_HEAD_ROWS_DEFAULT) */
    /* A cap on one program's weight bytes (weights/weight.bin; 0: none): a
     * layer whose programs exceed it under program_split is split finer
     * (layer -> kernel -> function) until they fit. */
    int max_program_bytes;
    lower_bucket_form bucket_form;
} lower_forms;
const char *lower_program_split_name(lower_program_split s); /* "layer", "kernel", "function" */
const char *lower_head_split_name(lower_head_split s);       /* "per-chunk", "one" */
/* The value of a name (-1: none). */
int lower_program_split_parse(const char *name);
int lower_head_split_parse(const char *name);
const char *lower_kv_update_name(lower_kv_update k); /* "onehot", "gather", "host" */
int lower_kv_update_parse(const char *name);
const char *lower_rope_form_name(lower_rope_form r); /* "conv", "matmul" */
int lower_rope_form_parse(const char *name);
const char *lower_attention_form_name(lower_attention_form a); /* "broadcast", "grouped" */
int lower_attention_form_parse(const char *name);

typedef struct lower_palette_options {
    int bits;           /* 0: weights stay fp16; else 1, 2, 4, 6 or 8 */
    int64_t group_size; /* output channels per table; 0: one table per tensor */
    uint64_t seed;      /* k-means++ seeding (deterministic per group) */
    /* 1: every group that holds an exact 0.0 gets 0.0 as a fixed table
     * entry (a pinned k-means centre), so zero padding expands to exactly
     * 0 (Qwen3.5's padded value heads) */
    int zero_entry;
} lower_palette_options;

/* The most Lloyd steps per group (recorded in bundle manifests). */
#define LOWER_PALETTE_MAX_STEPS 1000

/* The MIL index dtype for `bits` (uint1 ... uint8), MIL_DT_INVALID if none. */
mil_dtype lower_palette_index_dtype(int bits);


typedef struct lower_fp16_stats {
    size_t n_values;     /* converted */
    size_t n_saturated;  /* finite values beyond +/-65504, now +/-65504 */
    size_t n_nonfinite;  /* inf/NaN in the source */
} lower_fp16_stats;


/* The encoder's function name for a shape: "encoder_b3_s64". */
void mb_lower_fn_name(char *buf, size_t cap, int batch, int seq);

#endif
