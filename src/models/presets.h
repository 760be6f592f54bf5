/* The model shapes nectar knows by name (`--like qwen3-0.6b`): one row per
 * published checkpoint, for every command that takes --like (gen-random,
 * bounds). A row holds what the config.json of that checkpoint says about
 * sizes and special tokens; families read the fields they use. Adding a
 * model is adding a row; adding a family is adding an enum value, its rows
 * and its random writer (models/model_random.h). */
#ifndef NC_MODELS_PRESETS_H
#define NC_MODELS_PRESETS_H

#include <stddef.h>

#include "base/error.h"

typedef enum model_family {
    MODEL_FAMILY_QWEN3,      /* Qwen3ForCausalLM (models/qwen3.h) */
    MODEL_FAMILY_MODERNBERT, /* ModernBertForMaskedLM (models/modernbert.h) */
    MODEL_FAMILY_QWEN35,     /* Qwen3.5's text model (models/qwen35.h) */
    MODEL_FAMILY_LLAMA,      /* LlamaForCausalLM (qwen3.h's layout, models/llama_config.h) */
    MODEL_FAMILY_GEMMA3,     /* Gemma3ForCausalLM (qwen3.h's layout, models/gemma3_config.h) */
} model_family;

typedef struct model_preset {
    const char *name; /* "qwen3-0.6b" */
    model_family family;
    int hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, max_pos;
    int tied;                /* tie_word_embeddings */
    double rope_theta;       /* ModernBERT: the global layers' */
    double rope_theta_local; /* ModernBERT's sliding-window layers; 0 for Qwen3 */
    int bos, eos;            /* config.json's ids */
    int eos_extra;           /* Qwen3: generation_config.json's second EOS; -1: none */
    int pad, cls, sep;       /* ModernBERT's ids; -1 for Qwen3 */
    /* Qwen3.5's Gated DeltaNet layers (0 elsewhere): key and value heads,
     * their head dim (dk = dv); every 4th layer is full attention, whose
     * RoPE covers 1/4 of head_dim */
    int lin_k_heads, lin_v_heads, lin_head_dim;
    /* Llama 3.x: rope_scaling "llama3"'s factor (low/high frequency factors
     * 1 and 4 and an original context of 8192 in every 3.x config); 0: none */
    float rope_llama3_factor;
    /* Gemma 3: its sliding layers' window (every 6th layer is global; the
     * sliding layers' RoPE base is rope_theta_local); 0 elsewhere */
    int sliding_window;
} model_preset;

/* The row named `name`, or NULL. */
const model_preset *model_preset_find(const char *name);
/* The i-th row (0, 1, ...), NULL past the last: for listing and tests. */
const model_preset *model_preset_at(int i);
/* The row named `name`, or NC_ERR_NOT_FOUND naming every known preset. */
nc_status model_preset_get(const char *name, const model_preset **out, nc_error *err);
/* The names of one family's rows (all rows when family < 0) joined by sep:
 * "a, b, c" or "a|b|c". */
void model_preset_names(int family, const char *sep, char *buf, size_t cap);

#endif
