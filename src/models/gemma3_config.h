/* Gemma 3's config.json (model_type "gemma3_text": the 270M and 1B
 * checkpoints; or the hub's multimodal "gemma3", whose text model is its
 * "text_config") into the Qwen3-layout config the CPU decoder runs
 * (qwen3.h): q/k norms, norms stored as w (scaled by 1 + w), four norms a
 * layer, GeGLU with tanh GELU, the embedding scaled by sqrt(hidden_size),
 * query_pre_attn_scalar, sliding-window layers (layer_types, or the older
 * sliding_window_pattern) with their own RoPE base (rope_local_base_freq)
 * beside the global layers' rope_theta and rope_scaling (default or
 * linear), final_logit_softcapping. Gemma3TextConfig's defaults where a
 * field is absent (transformers' configuration_gemma3.py). Refuses, naming
 * the field, what this engine would compute differently (biases, another
 * activation, bidirectional attention, other RoPE types). */
#ifndef NC_MODELS_GEMMA3_CONFIG_H
#define NC_MODELS_GEMMA3_CONFIG_H

#include <jansson.h>

#include "models/qwen3.h"

nc_status gemma3_config_from_json(const json_t *o, qwen3_config *c, const char *what,
                                  nc_error *err);

#endif
