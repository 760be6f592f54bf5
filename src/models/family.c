/* The family table (family.h). */
#include "models/family.h"

#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/mmap.h"
#include "models/gemma3_config.h"
#include "models/gemma3_config_write.h"
#include "models/llama_config.h"
#include "models/qwen3_config.h"

static const char *const qwen3_types[] = {"qwen3", NULL};
/* every qwen3_5* type (text, multimodal, MoE): the loader takes the first
 * two and refuses the MoE ones in one line */
static const char *const qwen35_types[] = {"qwen3_5*", NULL};
static const char *const llama_types[] = {"llama", NULL};
static const char *const modernbert_types[] = {"modernbert", NULL};
/* the text model, and the hub's multimodal checkpoints (its text_config) */
static const char *const gemma3_types[] = {"gemma3_text", "gemma3", NULL};

static const model_family_row rows[] = {
    {.name = "qwen3",
     .title = "Qwen3",
     .model_types = qwen3_types,
     .presets = MODEL_FAMILY_QWEN3,
     .read_config = qwen3_config_from_json,
     .open_decoder = qwen3_decoder_open,
     .read_dims = qwen3_dims_load,
     .chat = CHAT_QWEN3,
     .end_tokens = {"<|im_end|>"},
     .think_open = "<think>",
     .think_close = "</think>",
     .compiles = 1,
     .random_tokenizer = "qwen3-tokenizer"},
    {.name = "qwen35",
     .title = "Qwen3.5",
     .model_types = qwen35_types,
     .presets = MODEL_FAMILY_QWEN35,
     .open_decoder = qwen35_decoder_open,
     .read_dims = qwen35_dims_load,
     .chat = CHAT_QWEN35,
     .end_tokens = {"<|im_end|>"},
     .think_open = "<think>",
     .think_close = "</think>",
     .prompt_opens_think = 1,
     .compiles = 1,
     /* Qwen3.5's own tokenizer does not ship with nectar; Qwen3's ids all
        fit its larger vocabulary and it has the same chat tokens */
     .random_tokenizer = "qwen3-tokenizer"},
    /* Llama 3.x and its architecture's other configs (SmolLM2). No real
     * Llama tokenizer ships with nectar: a random Llama folder gets Qwen3's
     * (docs/llama.md). */
    {.name = "llama",
     .title = "Llama",
     .model_types = llama_types,
     .presets = MODEL_FAMILY_LLAMA,
     .read_config = llama_config_from_json,
     .write_config = llama_config_to_json,
     .open_decoder = qwen3_decoder_open, /* Qwen3's decoder, as the config says */
     .read_dims = qwen3_dims_load,
     .chat = CHAT_LLAMA3,
     .end_tokens = {"<|eot_id|>", "<|end_of_text|>"},
     .compiles = 1, /* Qwen3's lowering without the q/k norms (docs/lowering.md) */
     .random_tokenizer = "qwen3-tokenizer"},
    /* Gemma 3's text model (270M, 1B; the multimodal checkpoints' language
     * model). No Gemma tokenizer ships with nectar (its licence): a random
     * Gemma folder gets Qwen3's (docs/gemma3.md). */
    {.name = "gemma3",
     .title = "Gemma 3",
     .model_types = gemma3_types,
     .presets = MODEL_FAMILY_GEMMA3,
     .read_config = gemma3_config_from_json,
     .write_config = gemma3_config_to_json,
     .open_decoder = qwen3_decoder_open, /* Qwen3's decoder, as the config says */
     .read_dims = qwen3_dims_load,
     .chat = CHAT_GEMMA3,
     .end_tokens = {"<end_of_turn>", "<eos>"},
     .compiles = 1, /* Qwen3's lowering with Gemma's layers (docs/lowering.md) */
     .random_tokenizer = "qwen3-tokenizer"},
    {.name = "modernbert",
     .title = "ModernBERT",
     .model_types = modernbert_types,
     .is_encoder = 1,
     .presets = MODEL_FAMILY_MODERNBERT,
     .compiles = 1,
     /* a small byte-level BPE of our own with [CLS]/[SEP]/[MASK] */
     .random_tokenizer = "encoder-tokenizer"},
};
#define N_ROWS (int)(sizeof rows / sizeof rows[0])
_Static_assert(N_ROWS == MODEL_FAMILY_ROWS,
               "family.h: MODEL_FAMILY_ROWS must be the number of rows of family.c");

const model_family_row *model_family_at(int i) {
    return i >= 0 && i < N_ROWS ? &rows[i] : NULL;
}

const model_family_row *model_family_named(const char *name) {
    for (int i = 0; name && i < N_ROWS; i++)
        if (!strcmp(rows[i].name, name)) return &rows[i];
    return NULL;
}

const model_family_row *model_family_of_kind(const char *kind) {
    const char *dash = kind ? strrchr(kind, '-') : NULL;
    for (int i = 0; dash && i < N_ROWS; i++)
        if (strlen(rows[i].name) == (size_t)(dash - kind) &&
            !strncmp(rows[i].name, kind, (size_t)(dash - kind)))
            return &rows[i];
    return NULL;
}

const model_family_row *model_family_of_presets(model_family presets) {
    for (int i = 0; i < N_ROWS; i++)
        if (rows[i].presets == presets) return &rows[i];
    return NULL;
}

/* A model_types entry: exact, or a prefix when it ends in '*'. */
static int type_matches(const char *pattern, const char *type) {
    size_t n = strlen(pattern);
    if (n && pattern[n - 1] == '*') return !strncmp(pattern, type, n - 1);
    return !strcmp(pattern, type);
}

const model_family_row *model_family_of_type(const char *model_type) {
    for (int i = 0; model_type && i < N_ROWS; i++)
        for (const char *const *t = rows[i].model_types; *t; t++)
            if (type_matches(*t, model_type)) return &rows[i];
    return NULL;
}

void model_family_types(char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_ROWS; i++)
        for (const char *const *t = rows[i].model_types; *t && len < cap; t++)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", *t);
}

/* config.json's model_type in dir (NULL when the file has none). */
static nc_status type_of_dir(const char *dir, char *path, size_t cap, json_t **doc,
                             const char **type, nc_error *err) {
    *doc = NULL;
    *type = NULL;
    if (!nc_is_dir(dir)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no such model folder", dir);
    snprintf(path, cap, "%s/config.json", dir);
    if (!nc_file_exists(path)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: file not found", path);
    NC_TRY(nc_json_load_file(path, doc, err));
    *type = json_string_value(json_object_get(*doc, "model_type"));
    return NC_OK;
}

nc_status model_family_of_dir(const char *dir, const model_family_row **out, nc_error *err) {
    *out = NULL;
    char path[4200], types[256];
    json_t *doc;
    const char *type;
    NC_TRY(type_of_dir(dir, path, sizeof path, &doc, &type, err));
    *out = model_family_of_type(type);
    nc_status st = NC_OK;
    if (!*out) {
        model_family_types(types, sizeof types);
        st = nc_fail(err, NC_ERR_UNSUPPORTED, "%s: model_type '%s' is not supported (%s)", path,
                     type ? type : "(none)", types);
    }
    json_decref(doc);
    return st;
}

nc_status model_family_qwen3_config_load(const char *dir, qwen3_config *cfg, nc_error *err) {
    const model_family_row *f;
    NC_TRY(model_family_of_dir(dir, &f, err));
    if (!f->read_config)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s/config.json: a %s model does not have the Qwen3 layout this loader "
                       "reads",
                       dir, f->title);
    return qwen3_config_load_with(dir, f->read_config, cfg, err);
}
