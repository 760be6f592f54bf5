/* The seam between the server and a model: sequences (one per slot, each
 * with its own KV cache) and one decode step over several of them. The
 * server does tokenizing, the chat template, sampling and stop handling
 * itself (src/text, src/gen); an engine only turns tokens into logits.
 * Implementations: Qwen3 on the CPU (serve_engine_qwen3.c), an ANE bundle
 * through the MIL interpreter (serve_engine_mil.c) and a deterministic fake
 * for tests (serve_engine_fake.c). */
#ifndef NC_SERVE_ENGINE_H
#define NC_SERVE_ENGINE_H

#include <stdint.h>

#include "base/error.h"
#include "text/tokenizer.h"

#define SERVE_MAX_EOG 8

/* One sequence's share of a step: append tokens[0..n) to seq and write the
 * logits after the last one to logits[n_vocab]. Per-item status, so one
 * failing sequence (context full) does not fail the others. */
typedef struct serve_step_item {
    void *seq;
    const int32_t *tokens;
    int n;
    float *logits;
    nc_status status;
    nc_error err;
} serve_step_item;

typedef struct serve_engine serve_engine;
struct serve_engine {
    char model_id[256];         /* what /v1/models reports and requests may name */
    tok_tokenizer *tok;         /* owned by the engine */
    int n_vocab;                /* length of a logits row (may exceed the tokenizer's) */
    int ctx_max;                /* largest context a sequence may have */
    int32_t eog[SERVE_MAX_EOG]; /* end-of-generation ids */
    int n_eog;
    const char *kind;          /* "qwen3-cpu", "fake" */
    size_t kv_bytes_per_token; /* a sequence's cache cost per token (0: negligible) */
    void *impl;

    nc_status (*seq_new)(serve_engine *e, int ctx, void **seq, nc_error *err);
    void (*seq_free)(serve_engine *e, void *seq);
    int (*seq_pos)(serve_engine *e, void *seq);
    void (*seq_truncate)(serve_engine *e, void *seq, int n_keep);
    /* Runs the items; returns NC_OK unless the step as a whole failed. */
    nc_status (*step)(serve_engine *e, serve_step_item *items, int n_items, nc_error *err);
    void (*destroy)(serve_engine *e); /* frees impl and tok, not e */
};

/* Opens the Qwen3 CPU engine on a model folder. */
typedef struct serve_engine_options {
    int n_threads;    /* <= 0: all cores */
    int ctx;          /* per-slot context wanted (capped by the model) */
    int fake_step_ms; /* fake engine: sleep per step (tests of queueing) */
} serve_engine_options;

nc_status serve_engine_open_qwen3(const char *dir, const serve_engine_options *opt,
                                  serve_engine *out, nc_error *err);

/* The fake engine reads tokenizer.json and fake_script.txt from dir; see
 * serve_engine_fake.c for the model it pretends to be. */
nc_status serve_engine_open_fake(const char *dir, const serve_engine_options *opt,
                                 serve_engine *out, nc_error *err);

/* The mil backend: -m names an ANE bundle (`nectar compile`), run through
 * the MIL interpreter (src/gen/engine_mil.h). That engine holds one
 * sequence, so each slot opens the bundle once and a step runs the slots
 * one after another. */
nc_status serve_engine_open_mil(const char *dir, const serve_engine_options *opt, serve_engine *out,
                                nc_error *err);

void serve_engine_close(serve_engine *e);

/* For the implementations: the end-of-generation ids (the config's plus
 * <|im_end|> and <|endoftext|> when the tokenizer has them; e->tok set),
 * and the model id (the folder's name). */
void serve_engine_set_eog(serve_engine *e, const int32_t *ids, int n);
void serve_engine_set_id(serve_engine *e, const char *dir);

int serve_engine_is_eog(const serve_engine *e, int32_t id);

#endif
