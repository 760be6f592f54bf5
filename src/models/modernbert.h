/* ModernBERT-family encoders (ModernBERT-base/large, mmBERT) on the CPU: load
 * a Hugging Face folder (ModernBertModel, ...ForMaskedLM or
 * ...ForSequenceClassification) and run whole padded batches through the
 * encoder and its head, as transformers' modeling_modernbert.py computes them
 * (eager attention, fp32). The API is split at the points where another
 * engine may take over: embeddings (+ LayerNorm), the encoder layers, and the
 * tail (pooling, MLM head, classifier head) on final hidden states. */
#ifndef NC_MODELS_MODERNBERT_H
#define NC_MODELS_MODERNBERT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define MODERNBERT_MAX_LAYERS 256

typedef enum {
    MODERNBERT_HEAD_NONE,
    MODERNBERT_HEAD_MLM,
    MODERNBERT_HEAD_CLASSIFIER
} modernbert_head;
typedef enum { MODERNBERT_POOL_CLS, MODERNBERT_POOL_MEAN } modernbert_pooling;

/* Activation functions named by hidden_activation / classifier_activation. */
typedef enum {
    MODERNBERT_ACT_GELU,
    MODERNBERT_ACT_GELU_TANH,
    MODERNBERT_ACT_SILU,
    MODERNBERT_ACT_RELU
} modernbert_act;

typedef struct modernbert_config {
    int vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
        head_dim, max_position_embeddings;
    int local_attention; /* full window: a local layer sees |q - k| <= local_attention / 2 */
    float norm_eps;
    float theta_global, theta_local; /* RoPE theta of full_attention / sliding_attention layers */
    unsigned char is_global[MODERNBERT_MAX_LAYERS];
    modernbert_act hidden_act, classifier_act;
    modernbert_head head; /* from architectures[0] */
    modernbert_pooling pooling;
    int classifier_bias, decoder_bias;
    int num_labels;  /* classifier head: rows of classifier.weight */
    char **id2label; /* num_labels strings ("LABEL_i" when the config names none) */
    int32_t pad_token_id, cls_token_id, sep_token_id; /* -1 when absent */
} modernbert_config;

typedef struct modernbert_model modernbert_model;

/* Reads dir/config.json; errors name the file and field. Free with
 * modernbert_config_free (the label strings). */
nc_status modernbert_config_load(const char *dir, modernbert_config *cfg, nc_error *err);
void modernbert_config_free(modernbert_config *cfg);
/* The same from a config.json held in memory (`what` names it in messages). */
nc_status modernbert_config_parse(const char *json, size_t len, const char *what,
                                  modernbert_config *cfg, nc_error *err);

/* n_threads <= 0: all cores. Checks every tensor's presence, dtype (F32, F16,
 * BF16) and shape; weights stay in the mmap. */
nc_status modernbert_load(const char *dir, int n_threads, modernbert_model **out, nc_error *err);
void modernbert_free(modernbert_model *m);
const modernbert_config *modernbert_model_config(const modernbert_model *m);
const char *modernbert_model_dtype(const modernbert_model *m);
int modernbert_model_threads(const modernbert_model *m);

/* Where a packed copy of the weights pays (cpu_packed_wanted: bf16 weights
 * on AVX-512 without AMX), the first forward pass packs the layer matrices
 * once into bf16 panels and keeps them (the bytes of the weights: 0.22 GB
 * for modernbert-base, 0.69 GB for -large, besides the mmap), in layer
 * order up to this many bytes (default MODERNBERT_PACK_BUDGET_BYTES); the
 * rest are packed again on every pass. 0 packs nothing. Call it before the
 * first forward pass. */
#define MODERNBERT_PACK_BUDGET_BYTES ((size_t)2 << 30)
void modernbert_set_pack_budget(modernbert_model *m, size_t bytes);

/* One forward pass over a batch of `batch` rows of `seq` token ids each
 * (row-major), with mask[b*seq + t] = 1 for a real token, 0 for padding
 * (NULL: all real). Only pad KEYS are masked, as in HF; outputs at pad
 * positions are not meaningful (left as zeros in hidden/last). Every output
 * pointer may be NULL:
 *   hidden  [num_hidden_layers + 1][batch][seq][D]: the embeddings output,
 *           then each layer's output; the last entry has the final norm
 *           applied (as HF's output_hidden_states);
 *   last    [batch][seq][D]: after final_norm;
 *   pooled  [batch][D]: CLS (first token) or mean over real tokens of last
 *           (pooling < 0: the config's classifier_pooling), no head applied;
 *   mlm_logits: MLM head, [n_mlm_rows][V] for the flat positions b*seq+t in
 *           mlm_rows, or [batch*seq][V] when mlm_rows is NULL;
 *   cls_logits [batch][num_labels]: classifier head.
 * NC_ERR_INVALID for a token id outside the vocabulary, a row without real
 * tokens, or a head the model does not have; NC_ERR_RANGE when seq exceeds
 * max_position_embeddings. Calls on one model must not overlap. */
typedef struct modernbert_io {
    const int32_t *ids;
    const int32_t *mask;
    int batch, seq;
    float *hidden, *last, *pooled, *mlm_logits, *cls_logits;
    const int *mlm_rows;
    int n_mlm_rows;
    int pooling; /* -1: config's; else modernbert_pooling */
} modernbert_io;

nc_status modernbert_forward(modernbert_model *m, const modernbert_io *io, nc_error *err);

/* The pieces of modernbert_forward, for engines that run the encoder layers
 * elsewhere (the ANE island): embedding rows + embedding LayerNorm for n
 * token ids into out [n][D]; and the tail (pooling, heads) from final hidden
 * states `last` [batch][seq][D] (io->ids is not read; io->mask is). */
nc_status modernbert_embed(modernbert_model *m, const int32_t *ids, int n, float *out,
                           nc_error *err);
nc_status modernbert_tail(modernbert_model *m, const float *last, const modernbert_io *io,
                          nc_error *err);

/* Name of the activation, and from a config string (-1: unknown). */
int modernbert_act_from_name(const char *name);

#endif
