/* The decision model (docs/decision.md): a ModernBERT-family encoder, a
 * type-embedding addition, H heavy transformer head layers, marker/CLS
 * selection, a small scorer over the K marker states, marker probabilities
 * (raw) and calibrated ones (softmax(z / T)), and an action head on features
 * taken from the RAW probabilities. A folder holds the encoder (config.json,
 * *.safetensors, tokenizer.json) plus decision.json and decision.safetensors.
 *
 * The forward pass is split where the study puts the engine boundary:
 * the encoder's embeddings (CPU), the NE region (encoder layers, type
 * addition, head layers: decision_region), and the CPU tail (selection,
 * scorer, probabilities, action head: decision_tail). */
#ifndef NC_DECIDE_DECISION_H
#define NC_DECIDE_DECISION_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "models/modernbert.h"

#define DECISION_MAX_MARKERS 64
#define DECISION_MAX_LAYERS 64
#define DECISION_MAX_FEATURES 4

typedef enum { DECISION_FEAT_RAW_PROBS, DECISION_FEAT_CLS } decision_feature;

typedef struct decision_config {
    int hidden_size;                               /* D, the encoder's */
    int num_markers;                               /* K */
    int32_t marker_token_ids[DECISION_MAX_MARKERS]; /* K ids, or one repeated id */
    int n_marker_ids;                              /* K or 1 */
    int type_vocab_size;                           /* K + 1 */
    int head_layers, head_heads, head_intermediate; /* H, heads, MLP width */
    int head_pre_norm;                             /* 1: "pre", 0: "post" */
    float head_norm_eps;
    int scorer_hidden, action_hidden, num_actions;
    decision_feature features[DECISION_MAX_FEATURES];
    int n_features;
    int feature_width; /* F: K per "raw_probs", D per "cls" */
    float temperature; /* T > 0 */
    char **action_labels; /* num_actions strings, or NULL when absent */
} decision_config;

/* Parses decision.json (held in memory; `what` names it in messages) and
 * checks it against the encoder's config: every field present, in range and
 * consistent (hidden_size = the encoder's, type_vocab_size = K + 1, marker
 * ids inside the vocabulary, heads dividing D, ...); an error is one line
 * naming the field. Free with decision_config_free. */
nc_status decision_config_parse(const char *json, size_t len, const char *what,
                                const modernbert_config *enc, decision_config *cfg, nc_error *err);
void decision_config_free(decision_config *cfg);

typedef struct decision_model decision_model;

/* Loads dir (encoder + decision.json + decision.safetensors); every head
 * tensor is checked for presence, dtype (F32, F16, BF16) and shape. */
nc_status decision_load(const char *dir, int n_threads, decision_model **out, nc_error *err);
void decision_free(decision_model *m);
const decision_config *decision_model_config(const decision_model *m);
modernbert_model *decision_model_encoder(decision_model *m);

/* One batch. ids, mask [batch][seq] as modernbert_io. markers [batch][K]
 * and types [batch][seq] may be NULL: then they are derived from the ids
 * (decision_find_markers, decision_type_ids). Outputs [batch][K] or
 * [batch][A]; any may be NULL. */
typedef struct decision_io {
    const int32_t *ids, *mask, *markers, *types;
    int batch, seq;
    float *marker_logits, *marker_probs, *calibrated, *action_probs;
    /* [N + H][batch][seq][D] or NULL: each encoder layer's output (the
     * last after the final norm), then each head layer's (the parity
     * gate's per-layer drift; pad positions left as zeros) */
    float *layers;
} decision_io;

nc_status decision_forward(decision_model *m, const decision_io *io, nc_error *err);

/* The CPU tail alone, from the NE region's output x [batch][seq][D] (after
 * the head layers): selection, scorer, both probabilities, action head.
 * io->markers must be set. */
nc_status decision_tail(const decision_model *m, const float *x, const decision_io *io,
                        nc_error *err);

/* Marker positions of one row of n tokens (mask as above, may be NULL) by
 * the config's marker ids: with K ids, marker k is the first occurrence of
 * id k; with one id, marker k is its k-th occurrence. NC_ERR_INVALID naming
 * the marker when one is missing. */
nc_status decision_find_markers(const decision_config *c, const int32_t *ids, const int32_t *mask,
                                int n, int32_t *markers, nc_error *err);
/* type id of token t = the number of markers at positions <= t (0 before
 * the first marker; 0 at padding). */
void decision_type_ids(const decision_config *c, const int32_t *markers, const int32_t *mask, int n,
                       int32_t *types);

#endif
