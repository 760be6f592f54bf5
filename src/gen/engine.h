/* The seam between the generation loop and a model backend: one sequence's
 * KV cache (position, capacity, truncation) and a forward pass that appends
 * tokens and returns the last token's logits. The cpu Qwen3 engine plugs in
 * through gen_engine_qwen3; a future backend (mil, ane) or a test's fake
 * model plugs in the same way, so the loop has no idea which one runs. */
#ifndef NC_GEN_ENGINE_H
#define NC_GEN_ENGINE_H

#include <stdint.h>

#include "base/error.h"

typedef struct gen_engine {
    void *model; /* shared, read-only weights */
    void *state; /* this sequence's cache */
    int n_vocab; /* length of a logits row */
    int32_t eos_ids[8];
    int n_eos; /* from the model's config (the loop adds the tokenizer's) */
    int (*pos)(const void *state);
    int (*ctx)(const void *state);
    void (*truncate)(void *state, int n_keep);
    /* Appends n tokens; logits_last receives the last one's row. On error the
     * cache is unchanged. */
    nc_status (*forward)(void *model, void *state, const int32_t *tokens, int n, float *logits_last,
                         nc_error *err);
} gen_engine;

#endif
