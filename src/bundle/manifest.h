/* manifest.json of an ANE bundle: the model config, the KV cache and bucket
 * plan, every program with each function's inputs and outputs (name, shape,
 * dtype) read off the programs themselves, and what must still come from
 * the original checkpoint (the embedding table, by tensor name and file).
 * The mil engine binds every buffer by the names listed here. The format is
 * described in docs/lowering.md. */
#ifndef NC_BUNDLE_MANIFEST_H
#define NC_BUNDLE_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "bundle/bundle_forms.h"
#include "models/qwen3.h"
#include "mil/ir.h"

#define LOWER_MANIFEST_FORMAT "nectar-ane-bundle"
#define LOWER_MANIFEST_VERSION 1
#define LOWER_MAX_IO 20
#define LOWER_MAX_FUNCS (LOWER_N_KERNELS * LOWER_MAX_BUCKETS)

typedef struct lower_io {
    char name[48];
    char dtype[8];
    int rank;
    int64_t shape[4];
} lower_io;

typedef struct lower_fn_info {
    char name[48]; /* "attn_s64" */
    int seq;       /* the S of its activations */
    int n_in, n_out;
    lower_io in[LOWER_MAX_IO], out[LOWER_MAX_IO];
} lower_fn_info;

typedef struct lower_program_info {
    char path[64]; /* relative to the bundle: "layer_03/model.mil" */
    int layer;     /* -1 for the head */
    int n_fns;
    lower_fn_info fns[LOWER_MAX_FUNCS];
} lower_program_info;

struct model_family_row;

typedef struct lower_manifest {
    qwen3_config cfg;
    /* the writer's: cfg is written by its family's write_config (Llama,
     * Gemma 3: their own config.json objects); NULL or none: Qwen3's.
     * Read back, `model`'s model_type names the reader. */
    const struct model_family_row *family;
    int ctx, n_seqs, seqs[LOWER_MAX_BUCKETS];
    int lm_head_on_ane; /* 0: final norm + LM head on the CPU from the checkpoint */
    int n_head_chunks;
    int64_t head_rows[LOWER_MAX_HEAD_CHUNKS]; /* rows of logits_<i> */
    char source_dir[4096];                    /* the checkpoint folder (absolute) */
    char embed_tensor[128];                   /* "model.embed_tokens.weight" */
    char lm_head_tensor[128]; /* for the CPU head: "lm_head.weight" or the embedding */
    char final_norm_tensor[128];
    int n_programs; /* layers + head (if on the ANE) */
    lower_program_info *programs;
    lower_fp16_stats fp16;
    int kernels_per_layer; /* functions per layer and bucket, run in manifest order */
    lower_forms forms;     /* plan.forms (bundles from before them: the defaults) */
    int kernels_per_token;
    lower_palette_options palettize; /* bits 0: fp16 weights */
} lower_manifest;

/* Fills prog_info from a built program (function names, I/O types). */
nc_status lower_describe_program(const mil_program *prog, const char *path, int layer,
                                 lower_program_info *out, nc_error *err);

/* The same for a program of the enumerated bucket form (its functions'
 * sequence axis `?`): one entry per bucket and function, buckets outer,
 * named as the function, its `?` read as the bucket's S. Hosts run the
 * entries of bucket S in order, so each bucket's entries are a dataflow
 * as in the per-bucket form. */
nc_status lower_describe_enumerated(const mil_program *prog, const char *path, int layer,
                                    const int *seqs, int n_seqs, lower_program_info *out,
                                    nc_error *err);

nc_status lower_manifest_write(const lower_manifest *m, const char *path, nc_error *err);
/* Reads and validates BUNDLE/manifest.json; free with lower_manifest_free. */
nc_status lower_manifest_read(const char *bundle_dir, lower_manifest *m, nc_error *err);
/* The same from text in memory (`path` names it in messages): what the
 * fuzzer feeds. */
nc_status lower_manifest_parse(const char *text, size_t len, const char *path, lower_manifest *m,
                               nc_error *err);
void lower_manifest_free(lower_manifest *m);

/* The function named fn of a program, or NULL. */
const lower_fn_info *lower_manifest_fn(const lower_program_info *p, const char *fn);
/* An input (is_output 0) or output of f by name, or NULL. */
const lower_io *lower_fn_io(const lower_fn_info *f, const char *name, int is_output);

#endif
