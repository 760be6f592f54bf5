/* Gemma 3's config as a config.json object (gemma3_config_write.c). */
#ifndef NC_MODELS_GEMMA3_CONFIG_WRITE_H
#define NC_MODELS_GEMMA3_CONFIG_WRITE_H

#include <jansson.h>

#include "models/qwen3.h"

/* c as a "gemma3_text" config.json object that gemma3_config_from_json
 * reads back to c (a bundle's manifest keeps its model so): Qwen3's
 * writer's shape fields with Gemma's own (layer_types, sliding_window, the
 * two RoPE bases and the global layers' linear scaling,
 * query_pre_attn_scalar, final_logit_softcapping, hidden_activation).
 * NULL when out of memory. */
json_t *gemma3_config_to_json(const qwen3_config *c);

#endif
