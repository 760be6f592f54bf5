/* Llama's config.json (model_type "llama": Llama 3.x, SmolLM2 and other
 * configs of LlamaForCausalLM) into the Qwen3-layout config the CPU decoder
 * runs (qwen3.h): no q/k norms, and Llama 3's RoPE scaling when
 * rope_scaling says "llama3". Refuses, naming the field, what this engine
 * would compute differently (biases, other activations or RoPE types). */
#ifndef NC_MODELS_LLAMA_CONFIG_H
#define NC_MODELS_LLAMA_CONFIG_H

#include <jansson.h>

#include "models/qwen3.h"

nc_status llama_config_from_json(const json_t *o, qwen3_config *c, const char *what, nc_error *err);

/* c as a Llama config.json object that llama_config_from_json reads back to
 * c: Qwen3's writer's fields with model_type "llama" and, when c scales its
 * RoPE, a "llama3" rope_scaling (a bundle's manifest keeps its model so).
 * NULL when out of memory. */
json_t *llama_config_to_json(const qwen3_config *c);

#endif
