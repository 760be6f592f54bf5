/* Qwen3.5 on the CPU: the hybrid decoder of Gated DeltaNet (linear
 * attention) layers and gated full-attention layers, loaded from a Hugging
 * Face folder in either layout (Qwen3_5ForConditionalGeneration, weights
 * under model.language_model.*, the vision tower skipped; or text-only
 * Qwen3_5ForCausalLM). A qwen35_model is the shared read-only weights; a
 * qwen35_state is one sequence: the KV cache of the full-attention layers
 * plus, per linear-attention layer, the conv window and the delta-rule state
 * (fixed size, whatever the length). The math follows transformers'
 * modeling_qwen3_5.py (docs/qwen35.md). */
#ifndef NC_MODELS_QWEN35_H
#define NC_MODELS_QWEN35_H

#include <stdint.h>

#include "base/error.h"
#include "models/qwen3.h"

#define QWEN35_MAX_EOS 8
#define QWEN35_MAX_LAYERS 512
/* Rows per pass through the weights, as Qwen3's engine. */
#define QWEN35_MAX_BATCH 256
/* Tokens per chunk of the chunked delta rule (prefill); HF's chunk_size. */
#define QWEN35_CHUNK 64

typedef struct qwen35_config {
    int vocab_size, hidden_size, intermediate_size, num_hidden_layers, max_position_embeddings;
    /* full-attention layers */
    int num_attention_heads, num_key_value_heads, head_dim;
    int rotary_dim; /* head_dim * partial_rotary_factor, even */
    float rope_theta;
    /* linear-attention (Gated DeltaNet) layers */
    int linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim,
        linear_conv_kernel_dim;
    float rms_norm_eps;
    int tie_word_embeddings;
    int is_vl;                                /* hub layout: model.language_model.* */
    unsigned char is_full[QWEN35_MAX_LAYERS]; /* layer l is full attention */
    int n_full;                               /* layers with a KV cache */
    int32_t bos_token_id;                     /* -1 when none */
    int32_t eos_token_ids[QWEN35_MAX_EOS];
    int n_eos;
} qwen35_config;

typedef struct qwen35_model qwen35_model;
typedef struct qwen35_state qwen35_state;

/* Reads config.json (+ generation_config.json) from dir; errors name the
 * file and field (other model types, MoE, vision-only configs). */
nc_status qwen35_config_load(const char *dir, qwen35_config *cfg, nc_error *err);
/* Whether dir's config.json names a Qwen3.5 model (model_type qwen3_5,
 * qwen3_5_text or qwen3_5_moe*), for engine dispatch; 0 on any error. */
int qwen35_is_qwen35_dir(const char *dir);

/* The Qwen3-family shape fields of c (sizes, full-attention heads, eps,
 * theta, ties, bos/eos) as a qwen3_config: what callers that read a
 * decoder's shape take (bench, a bundle's manifest). */
void qwen35_config_shape(const qwen35_config *c, qwen3_config *shape);

/* n_threads <= 0: all cores. */
nc_status qwen35_load(const char *dir, int n_threads, qwen35_model **out, nc_error *err);
void qwen35_free(qwen35_model *m);
const qwen35_config *qwen35_model_config(const qwen35_model *m);
const char *qwen35_model_dtype(const qwen35_model *m);
size_t qwen35_model_weight_bytes_per_token(const qwen35_model *m);
/* Its dec_model (as qwen3_model_base). */
const struct dec_model *qwen35_model_base(const qwen35_model *m);
/* fp16 KV caches for states created from now on (fp32 until this is
 * called); the linear-attention states stay fp32. */
void qwen35_model_set_kv_f16(qwen35_model *m, int on);

nc_status qwen35_state_new(const qwen35_model *m, int ctx, qwen35_state **out, nc_error *err);
void qwen35_state_free(qwen35_state *s);
int qwen35_state_pos(const qwen35_state *s);
int qwen35_state_ctx(const qwen35_state *s);
/* Keeping n_keep < pos needs the recurrent state as it was after n_keep
 * tokens, which is not kept: the state is reset to empty (pos 0) unless
 * n_keep == pos, and the caller re-prefills (docs/qwen35.md). Returns the
 * position actually kept. */
int qwen35_state_truncate(qwen35_state *s, int n_keep);
/* The caller may truncate back to the current position soon (speculative
 * decoding's verification): the linear states at this position become the
 * snapshot, taken now or, while a replay is pending, by the next forward
 * once its replay rows are through; that forward keeps it instead of
 * snapshotting at its end. */
void qwen35_state_checkpoint(qwen35_state *s);
/* Copies src's whole sequence state into dst (same model and context):
 * what a server keeps to reuse a prefix. */
nc_status qwen35_state_copy(qwen35_state *dst, const qwen35_state *src, nc_error *err);

/* The CPU half of a partition with a device (docs/engine.md): a state
 * holding caches and recurrent states for the layers whose layers[l] is
 * set only, and one decoder layer's forward over rows [n][hidden] fp32 in
 * place for n tokens at positions pos.. (a full-attention layer: K and V
 * into the cache at pos..; a linear one: its state advances, and at pos 0
 * it starts from the empty state, so a replay from 0 after a truncation
 * needs no reset). Only qwen35_state_free and qwen35_layer_forward take
 * such a state. */
nc_status qwen35_state_new_layers(const qwen35_model *m, int ctx, const unsigned char *layers,
                                  qwen35_state **out, nc_error *err);
nc_status qwen35_layer_forward(qwen35_model *m, qwen35_state *s, int layer, float *rows, int n,
                               int pos, nc_error *err);

/* Called after each decoder layer with the hidden states of the rows just
 * processed ([n_rows, width] fp32, row-major): --dump-layers. NULL: off. */
typedef void (*qwen35_layer_hook)(void *user, int layer, const float *rows, int n_rows, int width);
void qwen35_set_layer_hook(qwen35_model *m, qwen35_layer_hook hook, void *user);

typedef struct qwen35_batch_item {
    qwen35_state *state;
    const int32_t *tokens;
    int n;
    float *logits_last; /* vocab_size floats, or NULL */
    float *logits_all;  /* n * vocab_size floats, or NULL */
} qwen35_batch_item;

/* Appends each item's tokens to its state; the rows of all items share each
 * pass over the weights. Prompt rows of one sequence go through the linear
 * layers as chunks of QWEN35_CHUNK (the chunked delta rule), single rows by
 * the recurrent step. Checked up front: on error no state changes. */
nc_status qwen35_forward_batch(qwen35_model *m, qwen35_batch_item *items, int count, nc_error *err);
nc_status qwen35_forward(qwen35_model *m, qwen35_state *s, const int32_t *tokens, int n,
                         float *logits_last, float *logits_all, nc_error *err);

#endif
