/* manifest.json of an encoder bundle (docs/encoders-ane.md): the
 * "nectar-ane-bundle" format of docs/lowering.md with model_type
 * "modernbert": the model's sizes, where the checkpoint lives (the host
 * still needs its embedding table, embedding norm and head), the shape plan
 * (buckets x batches), the crossings per call, and the encoder program with
 * each function's inputs and outputs. */
#ifndef NC_BUNDLE_MODERNBERT_MANIFEST_H
#define NC_BUNDLE_MODERNBERT_MANIFEST_H

#include <stddef.h>

#include "bundle/manifest.h"
#include "bundle/bundle_forms.h"

typedef struct mb_manifest {
    int hidden_size, num_hidden_layers, num_attention_heads, head_dim, vocab_size;
    char source_dir[4096]; /* the checkpoint folder (absolute) */
    int n_seqs, seqs[MB_LOWER_MAX_SHAPES];
    int n_batches, batches[MB_LOWER_MAX_SHAPES];
    int crossings_per_call; /* buffers copied between CPU and ANE per call */
    lower_fp16_stats fp16;
    lower_program_info program;      /* the encoder program (functions, I/O) */
    lower_palette_options palettize; /* bits 0: fp16 weights */
} mb_manifest;

nc_status mb_manifest_write(const mb_manifest *m, const char *path, nc_error *err);
/* Reads and validates BUNDLE/manifest.json. */
nc_status mb_manifest_read(const char *bundle_dir, mb_manifest *m, nc_error *err);
/* The same from memory (`path` names it in messages): what the fuzzer feeds. */
nc_status mb_manifest_parse(const char *text, size_t len, const char *path, mb_manifest *m,
                            nc_error *err);
/* 1 when BUNDLE/manifest.json names model_type "modernbert" (cheap sniff for
 * commands that accept either kind of bundle). */
int mb_manifest_is_encoder(const char *bundle_dir);
/* 1 when the JSON file's model_type (inside member `object`, or at the top
 * when object is NULL) is "modernbert"; 0 for anything else or unreadable. */
int mb_json_names_modernbert(const char *path, const char *object);

#endif
