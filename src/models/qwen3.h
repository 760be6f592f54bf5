/* Qwen3 on the CPU: load a Hugging Face model folder and run the decoder.
 * Llama (3.x, and configs of its architecture such as SmolLM2) runs here
 * too: the same layers without the per-head q/k norms, with Llama 3's RoPE
 * scaling (docs/llama.md). A qwen3_model holds the read-only weights (mmapped safetensors), the config,
 * the thread pool and one batch workspace, and is shared by every sequence;
 * a qwen3_state is one sequence: its KV cache (fp32, or fp16 on request;
 * sized to its context,
 * allocated once). The math follows transformers' modeling_qwen3.py. */
#ifndef NC_MODELS_QWEN3_H
#define NC_MODELS_QWEN3_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "cpu/cpu_matmul.h"
#include "models/rope_scaling.h"

#define QWEN3_MAX_EOS 8
#define QWEN3_MAX_LAYERS 4096 /* what the config readers accept */

/* The MLP's gate activation: SiLU (Qwen3, Llama) or GELU with the tanh
 * approximation (Gemma 3's gelu_pytorch_tanh). */
typedef enum qwen3_act { QWEN3_ACT_SILU, QWEN3_ACT_GELU_TANH } qwen3_act;

typedef struct qwen3_config {
    int vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
        num_key_value_heads, head_dim, max_position_embeddings;
    float rms_norm_eps, rope_theta;
    int tie_word_embeddings;
    int32_t bos_token_id; /* -1 when the config names none */
    int32_t eos_token_ids[QWEN3_MAX_EOS];
    int n_eos; /* from config.json + generation_config.json */
    /* What the families sharing this layout (models/family.h) differ in:
     * Qwen3 normalizes each query and key head before RoPE (q_norm,
     * k_norm); Llama does not, and Llama 3.x scales its RoPE frequencies. */
    int qk_norm;
    rope_scaling rope_scaling; /* factor 0: plain RoPE (Gemma 3: the global layers') */
    /* Gemma 3 (models/gemma3_config.h, docs/gemma3.md); all zero for Qwen3
     * and Llama, which keeps their behaviour. */
    qwen3_act act;               /* the MLP gate's activation */
    int norm_plus_one;           /* RMSNorm weights are stored as w and scale by 1 + w */
    int sandwich_norm;           /* four norms a layer: the attention output and the MLP output
                                    are RMSNormed before their residual adds
                                    (post_attention_layernorm, post_feedforward_layernorm), the MLP
                                    input by pre_feedforward_layernorm */
    float embed_scale;           /* embedding rows times this (0: 1): sqrt(hidden_size), which the
                                    loader rounds to the embedding's stored dtype as HF does */
    float query_pre_attn_scalar; /* attention scores scale by 1 / sqrt(this) (0: head_dim) */
    float final_softcap;         /* logits = cap * tanh(logits / cap) (0: none) */
    int sliding_window;          /* a sliding layer's query sees this many keys, its own included */
    float rope_local_theta;      /* the sliding layers' RoPE base (never scaled) */
    unsigned char sliding[QWEN3_MAX_LAYERS / 8]; /* bit l: layer l is a sliding-window layer */
    int multimodal; /* the hub's multimodal checkpoint: the text weights sit under
                       its language model's prefix; the vision weights are not read */
} qwen3_config;

/* Layer l attends within sliding_window keys (Gemma 3's local layers). */
static inline int qwen3_layer_sliding(const qwen3_config *c, int l) {
    return (c->sliding[l >> 3] >> (l & 7)) & 1;
}

/* The prefix of a checkpoint's decoder tensors ("model.", or a multimodal
 * Gemma 3's language model's) in w, for config c, into out. */
struct hf_weights;
void qwen3_tensor_prefix(const struct hf_weights *w, const qwen3_config *c, char *out, size_t cap);

typedef struct qwen3_model qwen3_model;
typedef struct qwen3_state qwen3_state;

typedef struct qwen3_load_options {
    int n_threads; /* <= 0: all cores */
} qwen3_load_options;

/* Reads a Qwen3 config.json (+ generation_config.json when present) from
 * dir into *cfg; errors name the file and field. Another model_type (Llama)
 * is refused: what reads every family of this layout is
 * model_family_qwen3_config_load (models/family.h). */
nc_status qwen3_config_load(const char *dir, qwen3_config *cfg, nc_error *err);

/* Opens the folder of any family of this layout (Qwen3, Llama: its
 * config.json's model_type picks the reader, models/family.h): config,
 * safetensors (single or sharded), checks every tensor's presence, dtype
 * and shape. opt may be NULL. */
nc_status qwen3_load(const char *dir, const qwen3_load_options *opt, qwen3_model **out,
                     nc_error *err);
void qwen3_free(qwen3_model *m);
const qwen3_config *qwen3_model_config(const qwen3_model *m);
/* The dtype name of the big matrices ("bf16", "f16", "f32"). */
const char *qwen3_model_dtype(const qwen3_model *m);
/* Bytes of matrix weights read per generated token (all layers + LM head). */
size_t qwen3_model_weight_bytes_per_token(const qwen3_model *m);
int qwen3_model_threads(const qwen3_model *m);
/* What every CPU decoder model holds (models/dec_model.h): its KV type,
 * weights' residency and pool, which models/decoder.h's shape reports. */
struct dec_model;
const struct dec_model *qwen3_model_base(const qwen3_model *m);

/* KV caches of states created from now on in fp16 (on) or fp32 (off, the
 * default; the command line turns it on for NECTAR_KV=f16): fp16 halves the cache's
 * memory and the bytes attention reads, at about 1e-3 relative error in K
 * and V; fp32 is exact against the fp32 reference. Not while states of the
 * model exist. */
void qwen3_model_set_kv_f16(qwen3_model *m, int on);

/* ctx <= 0 or above max_position_embeddings is capped to it. */
nc_status qwen3_state_new(const qwen3_model *m, int ctx, qwen3_state **out, nc_error *err);
void qwen3_state_free(qwen3_state *s);
int qwen3_state_pos(const qwen3_state *s); /* tokens currently in the cache */
int qwen3_state_ctx(const qwen3_state *s);
void qwen3_state_truncate(qwen3_state *s, int n_keep); /* drop cache entries >= n_keep */
/* Lowers the rows per internal batch (1..QWEN3_MAX_BATCH; scratch is sized
 * for the default), e.g. to interleave long prompts with other work. */
void qwen3_state_set_batch(qwen3_state *s, int max_rows);

/* Called after each decoder layer with the hidden states of the rows just
 * processed ([n_rows, width] fp32, row-major), e.g. for --dump-layers.
 * NULL (the default) turns it off. */
typedef void (*qwen3_layer_hook)(void *user, int layer, const float *rows, int n_rows, int width);
void qwen3_set_layer_hook(qwen3_model *m, qwen3_layer_hook hook, void *user);

/* Appends n tokens (batched: all n through each matrix at once, in chunks of
 * at most QWEN3_MAX_BATCH). Writes the last token's logits (vocab_size
 * floats) to logits_last and/or every token's (n * vocab_size) to logits_all,
 * either may be NULL. NC_ERR_RANGE if pos + n > ctx; NC_ERR_INVALID for a
 * token id outside the vocabulary. On error the state is unchanged. Calls on
 * one model must not overlap (its thread pool serves one call at a time);
 * states of different sequences may be used one after another freely. */
nc_status qwen3_forward(qwen3_model *m, qwen3_state *s, const int32_t *tokens, int n,
                        float *logits_last, float *logits_all, nc_error *err);

/* Several sequences in one step: the rows of every item share each pass
 * over the weights (e.g. one new token for each of several server slots).
 * Each item appends its tokens to its own state exactly as qwen3_forward
 * would; items must name distinct states. Checked up front: on error no
 * state changes. */
typedef struct qwen3_batch_item {
    qwen3_state *state;
    const int32_t *tokens;
    int n;
    float *logits_last; /* vocab_size floats, or NULL */
    float *logits_all;  /* n * vocab_size floats, or NULL */
} qwen3_batch_item;

nc_status qwen3_forward_batch(qwen3_model *m, qwen3_batch_item *items, int count, nc_error *err);

/* The CPU half of a partition with a device (docs/engine.md, "A refused
 * layer on the CPU engine's kernels"): a state whose KV cache holds only
 * the layers whose layers[l] is set, and one decoder layer's forward over
 * rows [n][hidden] fp32 in place (the residual stream in, the layer's
 * output out) for n tokens at positions pos.. of that state: their K and V
 * go into its cache at pos.., their queries see positions 0..their own
 * (a truncation is the caller passing a smaller pos). Only qwen3_state_free
 * and qwen3_layer_forward take such a state. */
nc_status qwen3_state_new_layers(const qwen3_model *m, int ctx, const unsigned char *layers,
                                 qwen3_state **out, nc_error *err);
nc_status qwen3_layer_forward(qwen3_model *m, qwen3_state *s, int layer, float *rows, int n,
                              int pos, nc_error *err);

/* Layer tensors from elsewhere than a folder's safetensors (an ANE
 * bundle's weight.bin): mat fills *out with layer `layer`'s tensor that a
 * checkpoint names "<prefix>layers.<layer>.<name>" ("self_attn.q_proj.weight",
 * "input_layernorm.weight", ...) as a [rows, cols] matrix (a norm: [n, 1],
 * holding what the model multiplies by: Gemma's 1 + w). Its data must
 * outlive the model. */
typedef struct qwen3_tensor_source {
    nc_status (*mat)(void *user, int layer, const char *name, int rows, int cols, cpu_mat *out,
                     nc_error *err);
    void *user;
} qwen3_tensor_source;

/* A model of config_dir's config.json whose layers marked in layers[] come
 * from src (the others, the embedding and the head are empty): what
 * qwen3_layer_forward needs, and nothing else may be called on it but
 * qwen3_state_new_layers and qwen3_free. */
nc_status qwen3_load_layers(const char *config_dir, const qwen3_tensor_source *src,
                            const unsigned char *layers, int n_threads, qwen3_model **out,
                            nc_error *err);

/* Rows (tokens, over all sequences) per pass through the weights. */
#define QWEN3_MAX_BATCH 256

#endif
