/* Random-weight ModernBERT-family folders at real shapes (ModernBERT-base,
 * ModernBERT-large, mmBERT-base) in HF layout, as ModernBertForMaskedLM
 * (config.json with the hub's legacy theta keys, model.safetensors with the
 * decoder tied to the embeddings), for benchmarks and memory checks without
 * downloads. `nectar gen-random --like modernbert-base OUT` reaches it. */
#ifndef NC_MODELS_MODERNBERT_RANDOM_H
#define NC_MODELS_MODERNBERT_RANDOM_H

#include <stdint.h>

#include "io/safetensors.h"

/* 1 when `like` names one of the shapes here ("modernbert-base", ...). */
int modernbert_random_knows(const char *like);
/* "modernbert-base, modernbert-large, mmbert-base" */
const char *modernbert_random_names(void);

/* Writes config.json and model.safetensors into the existing folder out.
 * Matrices uniform with std 0.02, norm weights 1 + that; deterministic for
 * a seed whatever n_threads. *bytes_out (may be NULL): weight bytes. */
nc_status modernbert_random_write(const char *like, const char *out, st_dtype dtype, uint64_t seed,
                                  int n_threads, size_t *bytes_out, nc_error *err);

#endif
