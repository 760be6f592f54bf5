/* The model families nectar runs, one row each: the one place that knows a
 * family by name. A row says which config.json `model_type` values it
 * matches, whether it decodes text or encodes it, how its config is read,
 * its chat template and the tokens that end a turn or open reasoning, its
 * presets, whether it has an ANE lowering, and the tokenizer a random folder
 * of it gets. Everything that used to test a family by name ("qwen35...",
 * "modernbert...") looks its row up here instead; the engine table
 * (src/engine/engine.c) names each backend's opener per family. Adding a
 * family is adding a row (docs/engine.md). */
#ifndef NC_MODELS_FAMILY_H
#define NC_MODELS_FAMILY_H

#include <jansson.h>

#include "base/error.h"
#include "models/decoder.h"
#include "models/presets.h"
#include "models/qwen3.h"
#include "text/chat.h"

/* How a family whose weights follow Qwen3's layout (qwen3.h: Qwen3, Llama)
 * reads config.json into the shared config (NULL for the other families,
 * whose loaders read their own). */
typedef nc_status (*model_qwen3_reader)(const json_t *o, qwen3_config *c, const char *what,
                                        nc_error *err);

#define MODEL_FAMILY_END_TOKENS 2

typedef struct model_family_row {
    const char *name;                     /* "qwen3": engine kinds are "<name>-<backend>" */
    const char *title;                    /* "Qwen3", for messages */
    const char *const *model_types;       /* matched against model_type; "x*" is a prefix */
    int is_encoder;                       /* encodes (ModernBERT) rather than generates */
    model_family presets;                 /* its rows in presets.c (gen-random, bounds) */
    model_qwen3_reader read_config;       /* Qwen3-layout decoders; NULL: the family's own loader */
    /* its config as the config.json object read_config reads back (a
     * bundle's manifest keeps its model so); NULL: Qwen3's writer */
    json_t *(*write_config)(const qwen3_config *c);
    /* its CPU decoder (models/decoder.h), what the cpu engine runs; NULL
     * for encoders */
    nc_status (*open_decoder)(const char *dir, const decoder_options *o, decoder *d,
                              nc_error *err);
    /* its decoder's sizes from a folder's config.json, weights unread
     * (`nectar bounds --config`); NULL for encoders */
    nc_status (*read_dims)(const char *dir, decoder_dims *d, nc_error *err);
    chat_family chat;                     /* its chat template (decoders) */
    const char *end_tokens[MODEL_FAMILY_END_TOKENS]; /* end a turn beside the config's eos
                                                        (NULL: no more) */
    const char *think_open, *think_close; /* its reasoning block's tokens (NULL: none) */
    int prompt_opens_think; /* with thinking on, the generation prompt ends inside the
                               reasoning block ("<think>\n": Qwen3.5) */
    int compiles;                         /* `nectar compile` has a lowering for it */
    const char *random_tokenizer;         /* what gen-random copies into a random folder by
                                             default (share/nectar/<this>); a decoder shape
                                             whose vocabulary is too small for it gets
                                             share/nectar/small-tokenizer */
} model_family_row;

/* How many rows family.c has (a build-time check there keeps it so): what
 * tables built from this one are sized by (the engine's kinds). */
#define MODEL_FAMILY_ROWS 5

/* The i-th row (0, 1, ...), NULL past the last. */
const model_family_row *model_family_at(int i);
/* The row named `name` ("qwen35"), or NULL. */
const model_family_row *model_family_named(const char *name);
/* The row of an engine kind ("qwen35-cpu", "llama-mil"): the family named
 * before its last '-'; NULL when none ("script"). */
const model_family_row *model_family_of_kind(const char *kind);
/* The row whose presets are `presets`' (model_preset.family), or NULL. */
const model_family_row *model_family_of_presets(model_family presets);
/* The row matching a config.json model_type, or NULL. */
const model_family_row *model_family_of_type(const char *model_type);
/* The row of a folder's config.json (a bundle keeps a copy): fails with
 * one line naming the file when it is missing, unreadable or of no known
 * family. */
nc_status model_family_of_dir(const char *dir, const model_family_row **out, nc_error *err);
/* The families' model_type values, "qwen3, qwen3_5*, llama, modernbert":
 * for messages. */
void model_family_types(char *buf, size_t cap);

/* A Qwen3-layout folder's config (config.json through its family's reader,
 * then generation_config.json's eos): what qwen3_load reads. A model_type
 * of another family fails naming it. */
nc_status model_family_qwen3_config_load(const char *dir, qwen3_config *cfg, nc_error *err);

#endif
