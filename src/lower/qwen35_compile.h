/* `nectar compile` for Qwen3.5: the per-layer part. The Qwen3 compile
 * driver (qwen3_compile.c) plans buckets, writes the head, the manifest and
 * the bundle; for a Qwen3.5 folder it asks this file for each layer's
 * program: a full-attention layer as a gated Qwen3 layer program (q_proj
 * split into the query and the output gate, partial rotary, (1 + w)
 * norms), a linear-attention layer as lower_qwen35_linear_program. */
#ifndef NC_LOWER_QWEN35_COMPILE_H
#define NC_LOWER_QWEN35_COMPILE_H

#include "lower/qwen35_lower.h"
#include "lower/weights_fp16.h"

/* Where a layer's weights come from. */
typedef struct lower_q35_src {
    const qwen35_config *cfg;
    const hf_weights *w;
    nc_pool *pool;
    const char *model_dir;
    lower_fp16_stats *stats;
    lower_q35_prefill_form prefill_form; /* of the linear layers' prefill_sS */
} lower_q35_src;

/* "model.language_model." (hub layout) or "model." */
const char *lower_qwen35_prefix(const qwen35_config *c);

/* A Qwen3.5 RMSNorm weight of n entries as fp16 1 + w (from the exact
 * checkpoint value); out->data is malloc'd. */
nc_status lower_qwen35_norm1p(const lower_q35_src *s, const char *name, int64_t n,
                              lower_weight *out, nc_error *err);

/* Layer l's program into dir. rope: the partial rotary matrix [1, 1, hd, hd]
 * (lower_rope_matrix_partial), used by the full-attention layers. */
nc_status lower_qwen35_layer_program(const lower_q35_src *s, const lower_plan *p, int l,
                                     lower_weight *rope, const char *dir, mil_program **out,
                                     nc_error *err);

/* Kernels (dispatches) per token of one layer: kpl for a full-attention
 * layer, 2 (step, mlp) for a linear one. */
int lower_qwen35_layer_kernels(const qwen35_config *c, int l, int kernels_per_layer);

#endif
