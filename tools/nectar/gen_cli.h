/* What `nectar run` and `nectar chat` share: the model/sampling options, their
 * parsing with one-line errors, and loading a model folder into a
 * generation session (tokenizer, weights, KV cache). */
#ifndef NECTAR_CLI_GEN_CLI_H
#define NECTAR_CLI_GEN_CLI_H

#include <stdio.h>

#include "engine/engine.h"
#include "gen/generate.h"
#include "text/tokenizer.h"

#define GEN_CLI_MAX_STOPS 16

typedef struct gen_cli_opts {
    const char *model_dir;
    int max_new_tokens;
    int ctx;
    int n_threads;
    int has_seed;
    gen_sampler_params sampling;
    unsigned set;   /* GEN_SET_*: given on the command line (folder defaults must not override) */
    int is_set_ctx; /* --ctx given: with a bundle it must equal the bundle's */
    const char *stops[GEN_CLI_MAX_STOPS];
    int n_stops;
    int truncate;
    const char *backend;    /* "cpu" (default), "mil" or "ane": -m names an ANE bundle */
    const char *ane_device; /* --ane-device fake|real, or NULL (then $NECTAR_ANE_DEVICE) */
    const char *dump_dir;   /* --dump-layers: hidden state after each layer as .npy, or NULL */
} gen_cli_opts;

typedef struct gen_cli_loaded {
    gen_model *model;
    gen_seq *seq;
    tok_tokenizer *tok;          /* the model's */
    struct gen_layer_dump *dump; /* --dump-layers, written by gen_cli_unload */
    double load_s;
} gen_cli_loaded;

/* Defaults: -n max_new, --ctx 4096, Qwen3's non-thinking sampling
 * (temperature 0.7, top-p 0.8, top-k 20, min-p 0), a seed from the clock. */
void gen_cli_defaults(gen_cli_opts *o, int max_new);

/* Tries argv[*i] as one of the shared options, consuming its value. Returns
 * 1 when consumed, 0 when not a shared option, -1 after printing an error. */
int gen_cli_parse(int argc, char **argv, int *i, gen_cli_opts *o);

/* The help lines of the shared options. */
void gen_cli_print_options(FILE *f);

/* Sampling defaults from the model folder (gen_sampling_from_folder) for
 * every parameter the command line did not set. */
nc_status gen_cli_apply_generation_config(gen_cli_opts *o, nc_error *err);

/* --ane-device (or, when not given, $NECTAR_ANE_DEVICE, read here once):
 * fake or real (the default). With backend "ane", a real device this build
 * cannot reach is refused here (the command exits 2). */
nc_status gen_cli_ane_device(const char *flag, const char *backend, engine_ane_device *out,
                             nc_error *err);

/* The engine options of the command line (threads, --ctx, ANE device). */
nc_status gen_cli_engine_options(const gen_cli_opts *o, engine_options *eo, nc_error *err);

/* Opens the model through the engine seam (o->backend) and one sequence of
 * o->ctx tokens (a bundle: its fixed context). */
nc_status gen_cli_load(const gen_cli_opts *o, gen_cli_loaded *l, nc_error *err);
void gen_cli_unload(gen_cli_loaded *l);
/* The loaded sequence's context in tokens. */
int gen_cli_ctx(const gen_cli_loaded *l);

/* "prompt 12 tokens (3 cached), 512.3 tok/s | generated 64 tokens, 40.1 tok/s |
 * stop: length", no newline */
void gen_cli_print_timings(FILE *f, const gen_result *r);

#endif
