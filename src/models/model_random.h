/* Random-weight model folders at a preset's shape (models/presets.h), in HF
 * layout, for benchmarks and memory checks without downloads: Qwen3
 * (config.json, generation_config.json, model.safetensors or 4 GB shards +
 * index; qwen3_random.c), Qwen3.5's text model (qwen35_random.c) and
 * ModernBERT-family encoders as
 * ModernBertForMaskedLM (config.json with the hub's legacy theta keys,
 * model.safetensors with the decoder tied to the embeddings;
 * modernbert_random.c). Values come from io/safetensors_random.h: parallel,
 * deterministic for a seed whatever the thread count. */
#ifndef NC_MODELS_MODEL_RANDOM_H
#define NC_MODELS_MODEL_RANDOM_H

#include <stdint.h>

#include "base/json.h"
#include "cpu/cpu_kernels.h"
#include "io/safetensors.h"
#include "io/safetensors_random.h"
#include "models/presets.h"

typedef struct model_random_options {
    st_dtype dtype; /* ST_BF16, ST_F16 or ST_F32 */
    uint64_t seed;
    int n_threads; /* <= 0: all cores */
    int dry_run;   /* plan only: fill the report, write nothing */
    /* CPU_W_Q8 or CPU_W_Q4: every matrix stored in those blocks, as
     * `nectar quantize` would store the dtype folder (quant_random.h); any
     * other value: as dtype */
    cpu_wtype quant;
} model_random_options;

typedef struct model_random_report {
    int n_tensors, n_files; /* safetensors files (shards) */
    size_t bytes;           /* tensor data, as stored */
} model_random_report;

/* Writes the folder's config and weights into the existing folder out
 * (tokenizer files are the caller's). */
nc_status model_random_write(const model_preset *p, const char *out, const model_random_options *o,
                             model_random_report *r, nc_error *err);

/* The per-family writers model_random_write dispatches to. */
nc_status qwen3_random_write(const model_preset *p, const char *out, const model_random_options *o,
                             model_random_report *r, nc_error *err);
nc_status qwen35_random_write(const model_preset *p, const char *out, const model_random_options *o,
                              model_random_report *r, nc_error *err);
nc_status modernbert_random_write(const model_preset *p, const char *out,
                                  const model_random_options *o, model_random_report *r,
                                  nc_error *err);

/* start[0..shards]: the first of the n tensors t in each shard of at most
 * 4 GB (a bigger tensor gets a shard of its own); returns the number of
 * shards. */
int model_random_shards(const st_write_tensor *t, int n, int *start);
/* The tensors t (bytes from fill) as model.safetensors (one shard) or
 * HF-named shards plus model.safetensors.index.json. */
nc_status model_random_write_shards(const st_write_tensor *t, int n, st_fill_fn fill, void *ctx,
                                    const char *out, const int *start, int n_shards,
                                    nc_error *err);

/* What every family's writer ends with: the report for the planned
 * tensors, then (unless dry_run) cfg and gen as config.json and
 * generation_config.json and the weights. Takes cfg and gen (NULL: out of
 * memory, unless dry_run). */
nc_status model_random_write_plan(st_random_plan *p, const char *out, json_t *cfg, json_t *gen,
                                  const model_random_options *o, model_random_report *r,
                                  nc_error *err);

/* A decoder family's writer: its tensors planned by `plan` (matrices and
 * norms from one seeded sum-of-4 stream), its config.json by `config`,
 * generation_config.json from the preset's ids, then as
 * model_random_write_plan. */
typedef void (*model_random_planner)(st_random_plan *p, const model_preset *s, st_dtype dt);
typedef json_t *(*model_random_config)(const model_preset *s, st_dtype dt);
nc_status model_random_write_decoder(const model_preset *s, const char *out,
                                     const model_random_options *o, model_random_planner plan,
                                     model_random_config config, model_random_report *r,
                                     nc_error *err);

/* A decoder preset's generation_config.json: bos_token_id and the
 * eos_token_id list (eos, then eos_extra when the preset has one). */
json_t *model_random_generation_json(const model_preset *p);

/* config.json's "torch_dtype" for a weight dtype ("bfloat16", ...). */
const char *model_random_torch_dtype(st_dtype dt);

#endif
