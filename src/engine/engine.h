/* The engine seam: the one interface between everything that generates or
 * encodes (src/gen, src/serve, src/bench, tools/) and the backends that
 * turn tokens into numbers. An engine is a loaded model (read-only weights,
 * shared); an engine_seq is one sequence's state on it (its KV cache, and
 * for a hybrid model its recurrent state beside it). One step runs several
 * sequences at once, each appending its tokens and getting the logits after
 * its last one. engine_open(kind, dir, options) is the only place a backend
 * is chosen: a row per kind in engine.c (docs/engine.md says how to add
 * one). Encoders ("modernbert-*") have no sequences; they answer encode. */
#ifndef NC_ENGINE_ENGINE_H
#define NC_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "models/decoder.h"
#include "models/family.h"
#include "models/modernbert.h"

#define ENGINE_MAX_EOS 8

typedef struct engine engine;
typedef struct engine_seq engine_seq; /* each kind defines its own */

typedef enum engine_ane_device {
    ENGINE_ANE_REAL, /* the Neural Engine (src/ane, macOS only) */
    ENGINE_ANE_FAKE  /* the MIL-interpreter-backed fake device (every OS) */
} engine_ane_device;

typedef enum engine_kv {
    ENGINE_KV_DEFAULT, /* the engine's own choice (fp32 on the cpu) */
    ENGINE_KV_F32,
    ENGINE_KV_F16
} engine_kv;

/* What runs a layer the device refused at every rung of the ladder
 * (docs/engine.md): the CPU engine's kernels, or the MIL interpreter on
 * its refused kernels. */
typedef enum engine_ane_cpu {
    ENGINE_ANE_CPU_KERNELS, /* the whole layer on the family's CPU decoder (the default) */
    ENGINE_ANE_CPU_INTERP   /* the refused functions in the interpreter, fp16 */
} engine_ane_cpu;

/* Everything that can change how a model runs, as plain values: tools/
 * read the command line and the environment once and fill this in; nothing
 * below tools/ reads the environment for it. */
typedef struct engine_options {
    int n_threads; /* <= 0: all cores */
    int ctx;       /* context per sequence; 0: the model's (a bundle's is fixed
                      when compiled: another value is an error) */
    engine_kv kv;  /* KV cache element type (cpu engines) */
    /* No kernel table here: the table is one per process, chosen before any
     * engine opens (cpu_select_table, from NECTAR_SIMD in tools/nectar/cli_env.c) */
    engine_ane_device ane_device; /* the ane engines */
    char ane_fake[128];           /* after "fake:": what the fake refuses (engine_ane_device.h) */
    engine_ane_cpu ane_cpu;       /* the ane engines' refused layers */
    int fake_step_ms;             /* the scripted test engine: sleep per step */
} engine_options;

/* One sequence's share of a step: append tokens[0..n) to seq and write the
 * logits after the last one to logits[n_vocab], or with logits_all (only on
 * an engine with has_logits_all) the logits after each token to
 * logits[n * n_vocab]: speculative decoding's verification. Per-item
 * status, so one failing sequence (context full) does not fail the others;
 * a failed item leaves its sequence as it was. */
typedef struct engine_step_item {
    engine_seq *seq;
    const int32_t *tokens;
    int n;
    float *logits;
    nc_status status;
    nc_error err;
    int logits_all;
} engine_step_item;

/* Called after each decoder layer with the hidden states of the rows just
 * processed ([n_rows, width] fp32, row-major): --dump-layers. */
typedef void (*engine_layer_hook)(void *user, int layer, const float *rows, int n_rows, int width);

typedef struct engine_ops {
    /* Decoders. ctx <= 0 or above ctx_max: ctx_max. */
    nc_status (*seq_new)(engine *e, int ctx, engine_seq **out, nc_error *err);
    void (*seq_free)(engine *e, engine_seq *s);
    int (*seq_pos)(const engine *e, const engine_seq *s); /* tokens in its cache */
    /* Drops cache entries >= n_keep and returns how many remain: n_keep, or
     * fewer where the state cannot go back that far (a recurrent state can
     * only be kept whole or dropped); the caller recomputes the rest. */
    int (*seq_truncate)(engine *e, engine_seq *s, int n_keep);
    /* Runs the items (distinct sequences); NC_OK unless the step as a
     * whole failed. Calls on one engine must not overlap. */
    nc_status (*step)(engine *e, engine_step_item *items, int n_items, nc_error *err);
    /* NULL where the backend cannot report per-layer states. */
    void (*set_layer_hook)(engine *e, engine_layer_hook hook, void *user);
    /* Encoders: one forward over a padded batch (modernbert_io's contract). */
    nc_status (*encode)(engine *e, const modernbert_io *io, nc_error *err);
    void (*close)(engine *e); /* frees impl */
    /* NULL where truncation is exact; else a hint that a truncation back to
     * the current position may follow soon (decoder_ops.state_checkpoint) */
    void (*seq_checkpoint)(engine *e, engine_seq *s);
} engine_ops;

struct engine {
    const engine_ops *ops;
    void *impl;
    const char *kind; /* "<family>-<backend>": "qwen3-cpu", "llama-mil", "qwen35-ane", ... */
    const model_family_row *family; /* its chat template, end tokens, ... (never NULL) */
    int is_encoder;
    int n_vocab; /* length of a logits row */
    int has_logits_all; /* step items may ask for every position's logits */
    int ctx_max; /* largest context a sequence may have */
    int n_layers, hidden;
    int32_t eos_ids[ENGINE_MAX_EOS]; /* from the model's config.json + generation_config.json */
    int n_eos;
    size_t kv_bytes_per_token; /* one sequence's cache cost per token (0: not known) */
    /* For reports (bench): 0 / NULL where the backend does not know. */
    const char *weight_dtype;
    size_t weight_bytes_per_token;
    const char *weights_residency; /* "read into memory on huge pages (auto)", "mmapped (...)" */
    int n_threads;
    int is_kv_f16;
    /* A decoder's sizes in config.json's terms, whatever its family (bench,
     * bounds); all 0 where the engine does not know them (the test engine) */
    decoder_dims dims;
    const modernbert_config *encoder; /* encoders: their config */
    /* Where the kernels run, one line (the ANE engines: per layer group,
     * the ladder's rungs and refusals, the bundle's lowering forms); NULL
     * where every kernel runs in one place (engine_placement says which). */
    const char *placement;
};

/* Opens model folder (or bundle) dir as engine `kind`. opt may be NULL. */
nc_status engine_open(const char *kind, const char *dir, const engine_options *opt, engine **out,
                      nc_error *err);
void engine_close(engine *e);
/* e->placement, or for the cpu and mil engines where their kernels run. */
const char *engine_placement(const engine *e);

/* The engine kind for a backend ("cpu", "mil", "ane") and a folder: its
 * config.json's model_type picks the family (a bundle keeps a copy of its
 * model's config.json). Fails naming the folder when no engine fits. */
nc_status engine_kind_for(const char *backend, const char *dir, const char **kind, nc_error *err);
/* The same among text generators / encoders only ("model_type 'X' is not
 * supported" for a model of the other sort). */
nc_status engine_kind_for_decoder(const char *backend, const char *dir, const char **kind,
                                  nc_error *err);
nc_status engine_kind_for_encoder(const char *backend, const char *dir, const char **kind,
                                  nc_error *err);

/* NC_OK where this build has the real Neural Engine bridge (macOS); else
 * NC_ERR_UNSUPPORTED with one line saying so (commands check it up front,
 * as a usage error, and the ane engines again). */
nc_status engine_ane_real_available(nc_error *err);

/* Every kind, NULL-terminated (help text, tests). */
const char *const *engine_kinds(void);

/* The family of a kind ("llama-cpu": llama; "script" stands in for qwen3);
 * NULL for no such kind. */
const model_family_row *engine_kind_family(const char *kind);
/* The kind serving family f on backend ("cpu", "mil", "ane"); NULL when
 * none does (or f is NULL). */
const char *engine_family_kind(const model_family_row *f, const char *backend);

/* Short forms of the ops. */
static inline nc_status engine_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    return e->ops->seq_new(e, ctx, out, err);
}
static inline void engine_seq_free(engine *e, engine_seq *s) {
    if (s) e->ops->seq_free(e, s);
}
static inline int engine_seq_pos(const engine *e, const engine_seq *s) {
    return e->ops->seq_pos(e, s);
}
static inline int engine_seq_truncate(engine *e, engine_seq *s, int n_keep) {
    return e->ops->seq_truncate(e, s, n_keep);
}
static inline nc_status engine_step(engine *e, engine_step_item *items, int n, nc_error *err) {
    return e->ops->step(e, items, n, err);
}

static inline void engine_seq_checkpoint(engine *e, engine_seq *s) {
    if (e->ops->seq_checkpoint) e->ops->seq_checkpoint(e, s);
}

/* One sequence, one forward: a step of one item (its error becomes err). */
nc_status engine_forward(engine *e, engine_seq *s, const int32_t *tokens, int n, float *logits,
                         nc_error *err);

/* Layer hook where the backend has one; NC_ERR_UNSUPPORTED otherwise. */
nc_status engine_set_layer_hook(engine *e, engine_layer_hook hook, void *user, nc_error *err);

/* Encoders: NC_ERR_UNSUPPORTED on a decoder. */
nc_status engine_encode(engine *e, const modernbert_io *io, nc_error *err);

#endif
