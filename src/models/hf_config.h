/* config.json fields that the decoder families (Qwen3, Qwen3.5) read the
 * same way from a Hugging Face folder: the EOS ids and the RoPE settings.
 * Each family's parser calls these, so both accept and refuse alike. */
#ifndef NC_MODELS_HF_CONFIG_H
#define NC_MODELS_HF_CONFIG_H

#include <stdint.h>

#include <jansson.h>

#include "base/error.h"
#include "models/rope_scaling.h"

/* model_type of o is `type` (else "model_type 'X' is not supported (this
 * reader takes 'type')") and hidden_act, when present, is "silu": what the
 * SiLU-gated decoder families check first. */
nc_status hf_config_check_type(const json_t *o, const char *type, const char *what, nc_error *err);

/* One part of a family's config reading: o (a parsed file named `what`)
 * into the family's config `cfg`. */
typedef nc_status (*hf_config_part)(const json_t *o, void *cfg, const char *what, nc_error *err);

/* A model folder's config: dir's config.json through `config`, then, when
 * generation_config.json exists, that object through `generation` (its
 * eos ids). Missing folder, missing config.json, bad JSON and a
 * generation_config.json that is not an object fail naming the file. */
nc_status hf_config_load_dir(const char *dir, hf_config_part config, hf_config_part generation,
                             void *cfg, nc_error *err);

/* num_attention_heads (required, 1..4096) and num_key_value_heads (default:
 * the same), which must divide it (grouped-query attention). */
nc_status hf_config_read_heads(const json_t *o, int *heads, int *kv_heads, const char *what,
                               nc_error *err);

/* eos_token_id of o: an int, a list of ints, or absent/null. Each id must
 * lie in [0, vocab); new ones are appended to ids[*n] (no repeats, at most
 * cap, the rest dropped). */
nc_status hf_config_read_eos(const json_t *o, int64_t vocab, int32_t *ids, int *n, int cap,
                             const char *what, nc_error *err);

/* rope_theta (and, when partial is not NULL, partial_rotary_factor) from
 * the top level of o, then from rope_parameters (transformers 5), which
 * wins; *theta and *partial hold the family's defaults on entry. A
 * rope_type (in rope_parameters or rope_scaling) other than "default" is
 * refused, except "llama3" when scaling is not NULL (its four fields are
 * read into *scaling; otherwise scaling->factor is 0), as is a theta that
 * is not a finite number > 1. */
nc_status hf_config_read_rope(const json_t *o, double *theta, double *partial,
                              rope_scaling *scaling, const char *what, nc_error *err);

/* The rope_type of one RoPE object o (key "rope_type", or "type" in older
 * configs): "default" passes (*scaling untouched), the types in `allow`
 * are read into *scaling, others are refused ("<label> 'yarn' is not
 * supported"). */
#define HF_ROPE_LLAMA3 1u
#define HF_ROPE_LINEAR 2u
nc_status hf_config_read_rope_type(const json_t *o, rope_scaling *scaling, unsigned allow,
                                   const char *what, const char *label, nc_error *err);

#endif
