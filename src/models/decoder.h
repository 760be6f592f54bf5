/* One CPU decoder of any family, as the engine drives it: each family's own
 * API (qwen3.h for Qwen3 and Llama, qwen35.h) behind one set of operations
 * (a sequence state, a forward over a batch of sequences, truncation, a
 * layer hook) and one shape, so one CPU engine adapter
 * (src/engine/engine_cpu.c) serves every decoder family. A family row
 * (models/family.h) names its opener. */
#ifndef NC_MODELS_DECODER_H
#define NC_MODELS_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "models/qwen3.h"
#include "models/qwen35.h"

/* One sequence's share of a forward: append tokens[0..n) to state and write
 * the logits after the last one to logits_last (vocab floats), or, with
 * logits_all set, the logits after each token (n rows: speculative
 * decoding's verification). */
typedef struct decoder_item {
    void *state;
    const int32_t *tokens;
    int n;
    float *logits_last;
    float *logits_all; /* NULL, or n * vocab floats */
} decoder_item;

typedef struct decoder_ops {
    /* ctx <= 0 or above the model's: the model's */
    nc_status (*state_new)(void *model, int ctx, void **out, nc_error *err);
    void (*state_free)(void *state);
    int (*state_pos)(const void *state); /* tokens in its cache */
    int (*state_ctx)(const void *state);
    /* Drops cache entries >= n_keep; returns the position kept (n_keep, or
     * less where a recurrent state cannot go back that far). */
    int (*state_truncate)(void *state, int n_keep);
    /* Distinct states; checked up front: on error no state changes. Calls
     * on one model must not overlap. */
    nc_status (*forward)(void *model, const decoder_item *items, int n, nc_error *err);
    /* NULL where the family cannot report per-layer states. */
    void (*set_layer_hook)(void *model, qwen3_layer_hook hook, void *user);
    void (*free)(void *model);
    /* NULL where truncation is exact (a KV cache alone); else keeps the
     * recurrent state at the current position, so that a truncation back
     * to it soon (a rejected draft) need not replay from further back. */
    void (*state_checkpoint)(void *state);
    /* The CPU half of a partition with a device (docs/engine.md, "A
     * refused layer on the CPU engine's kernels"); NULL where the family
     * cannot run one layer. layer_state_new: a state holding only the
     * layers whose layers[l] is set (freed by state_free; only
     * layer_forward takes it). layer_forward: decoder layer `layer` over
     * rows [n][hidden] fp32 in place, for n tokens at positions pos.. (a
     * KV cache is written at pos..; a recurrent layer at pos 0 starts from
     * the empty state). */
    nc_status (*layer_state_new)(void *model, int ctx, const unsigned char *layers, void **out,
                                 nc_error *err);
    nc_status (*layer_forward)(void *model, void *state, int layer, float *rows, int n, int pos,
                               nc_error *err);
} decoder_ops;

/* A decoder's sizes in config.json's terms, whatever its family: what the
 * engine reports and bench's roofline and bounds read. */
typedef struct decoder_dims {
    int layers, hidden, intermediate, heads, kv_heads, head_dim, vocab;
    int tied;       /* tie_word_embeddings: the head shares the embedding table */
    int no_qk_norm; /* attention without q/k norms (Llama) */
    int sandwich_norms; /* two more norms a layer, after attention and MLP (Gemma 3) */
    int rotary_dim;     /* the width of a head RoPE rotates (Qwen3.5: a part); 0: head_dim */
    /* A hybrid's linear-attention layers (Qwen3.5's Gated DeltaNet: their
     * heads, head widths and conv window); 0 where every layer attends. */
    int n_linear, lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, lin_conv_kernel;
} decoder_dims;

/* The dims of a Qwen3-layout config (Qwen3, Llama) and of Qwen3.5's. */
decoder_dims qwen3_dims(const qwen3_config *c);
decoder_dims qwen35_dims(const qwen35_config *c);
/* The same from a folder's config.json (+ generation_config.json): a
 * Qwen3-layout one through its family's reader, and a Qwen3.5 one. */
nc_status qwen3_dims_load(const char *dir, decoder_dims *d, nc_error *err);
nc_status qwen35_dims_load(const char *dir, decoder_dims *d, nc_error *err);
/* K and V of every attention (not linear) layer for one token, fp16 or fp32. */
size_t decoder_kv_bytes_per_token(const decoder_dims *d, int kv_f16);

/* What a caller reads of a loaded decoder. */
typedef struct decoder_shape {
    decoder_dims dims;
    int ctx_max;
    int kv_f16;                /* KV caches in fp16 */
    size_t kv_bytes_per_token; /* one sequence's cache cost per token */
    const char *dtype;         /* the matrices' ("bf16", "q8", ...) */
    size_t weight_bytes_per_token;
    const char *weights_residency; /* where the weights live, why (NULL: not known) */
    int n_threads;
    const int32_t *eos_ids; /* config.json + generation_config.json */
    int n_eos;
} decoder_shape;

/* The shape every family's open fills alike: its config's sizes, context
 * and EOS ids, its matrices' type and bytes read per token, and the KV
 * type, residency and threads of its dec_model (qwen3_model_base). */
void decoder_shape_fill(decoder_shape *s, const struct dec_model *b, decoder_dims dims, int ctx_max,
                        const int32_t *eos_ids, int n_eos, const char *dtype,
                        size_t weight_bytes_per_token);

typedef struct decoder {
    const decoder_ops *ops;
    void *model;
    decoder_shape shape;
} decoder;

typedef struct decoder_options {
    int n_threads; /* <= 0: all cores */
    int kv_f16;    /* -1: the family's default; 0: fp32; 1: fp16 */
} decoder_options;

/* The openers a family row names: load dir into *d (on failure *d holds
 * what needs freeing, decoder_close frees it). */
nc_status qwen3_decoder_open(const char *dir, const decoder_options *o, decoder *d, nc_error *err);
nc_status qwen35_decoder_open(const char *dir, const decoder_options *o, decoder *d, nc_error *err);
/* Qwen3's decoder for layer_forward alone, the marked layers' tensors from
 * src (qwen3_load_layers; config.json from config_dir), fp32 caches. */
nc_status qwen3_decoder_open_layers(const char *config_dir, const qwen3_tensor_source *src,
                                    const unsigned char *layers, int n_threads, decoder *d,
                                    nc_error *err);

void decoder_close(decoder *d);

#endif
