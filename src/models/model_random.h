/* Random-weight model folders at a preset's shape (models/presets.h), in HF
 * layout, for benchmarks and memory checks without downloads: Qwen3
 * (config.json, generation_config.json, model.safetensors or 4 GB shards +
 * index; qwen3_random.c) and ModernBERT-family encoders as
 * ModernBertForMaskedLM (config.json with the hub's legacy theta keys,
 * model.safetensors with the decoder tied to the embeddings;
 * modernbert_random.c). Values come from io/safetensors_random.h: parallel,
 * deterministic for a seed whatever the thread count. */
#ifndef NC_MODELS_MODEL_RANDOM_H
#define NC_MODELS_MODEL_RANDOM_H

#include <stdint.h>

#include "io/safetensors.h"
#include "models/presets.h"

typedef struct model_random_options {
    st_dtype dtype; /* ST_BF16, ST_F16 or ST_F32 */
    uint64_t seed;
    int n_threads; /* <= 0: all cores */
    int dry_run;   /* plan only: fill the report, write nothing */
} model_random_options;

typedef struct model_random_report {
    int n_tensors, n_files; /* safetensors files (shards) */
    size_t bytes;           /* tensor data */
} model_random_report;

/* Writes the folder's config and weights into the existing folder out
 * (tokenizer files are the caller's). */
nc_status model_random_write(const model_preset *p, const char *out, const model_random_options *o,
                             model_random_report *r, nc_error *err);

/* The per-family writers model_random_write dispatches to. */
nc_status qwen3_random_write(const model_preset *p, const char *out, const model_random_options *o,
                             model_random_report *r, nc_error *err);
nc_status modernbert_random_write(const model_preset *p, const char *out,
                                  const model_random_options *o, model_random_report *r,
                                  nc_error *err);

/* config.json's "torch_dtype" for a weight dtype ("bfloat16", ...). */
const char *model_random_torch_dtype(st_dtype dt);

#endif
