/* Qwen3's config.json as JSON: the one reader (everything that learns a
 * Qwen3 shape from a file comes through qwen3_config_from_json: the model
 * loader, `nectar bounds --config`, a bundle's manifest) and the one writer
 * (random-weight folders, a bundle's manifest). */
#ifndef NC_MODELS_QWEN3_CONFIG_H
#define NC_MODELS_QWEN3_CONFIG_H

#include <jansson.h>

#include "models/qwen3.h"

/* A config.json object into *c (eos from "eos_token_id" only: an int or a
 * list); `what` names the document in errors. */
nc_status qwen3_config_from_json(const json_t *o, qwen3_config *c, const char *what, nc_error *err);

/* What a family of this layout reads alike (models/family.h): sizes, eps,
 * RoPE, ties, bos and eos of o into *c, starting from the family's
 * defaults in *c (vocab_size, max_position_embeddings, rope_theta,
 * rms_norm_eps; the rest zero); Llama 3's RoPE scaling is read when
 * allow_llama3, else refused. The family checks model_type and its flags
 * first. */
nc_status qwen3_config_read_shape(const json_t *o, qwen3_config *c, int allow_llama3,
                                  const char *what, nc_error *err);

/* config.json in dir through `read` (a family's reader), then
 * generation_config.json's eos when present. */
typedef nc_status (*qwen3_config_reader)(const json_t *o, qwen3_config *c, const char *what,
                                         nc_error *err);
nc_status qwen3_config_load_with(const char *dir, qwen3_config_reader read, qwen3_config *cfg,
                                 nc_error *err);
/* qwen3_config_from_json on the file at path (config.json itself, not its
 * folder; no generation_config.json). */
nc_status qwen3_config_load_file(const char *path, qwen3_config *c, nc_error *err);
/* The HF fields of c ("model_type": "qwen3", sizes, eps, theta, ties, bos,
 * "eos_token_id" as an int or a list), a new object the caller owns, which
 * qwen3_config_from_json reads back to c. NULL when out of memory. */
json_t *qwen3_config_to_json(const qwen3_config *c);

#endif
