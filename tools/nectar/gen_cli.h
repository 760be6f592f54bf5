/* What `nectar run` and `nectar chat` share: the model/sampling options, their
 * parsing with one-line errors, and loading a model folder into a
 * generation session (tokenizer, weights, KV cache). */
#ifndef NECTAR_CLI_GEN_CLI_H
#define NECTAR_CLI_GEN_CLI_H

#include <stdio.h>

#include "gen/generate.h"
#include "models/qwen3.h"
#include "text/tokenizer.h"

#define GEN_CLI_MAX_STOPS 16

typedef struct gen_cli_opts {
    const char *model_dir;
    int max_new_tokens;
    int ctx;
    int n_threads;
    int has_seed;
    gen_sampler_params sampling;
    /* given on the command line (defaults from elsewhere must not override) */
    int is_set_temp, is_set_top_k, is_set_top_p, is_set_min_p, is_set_repeat;
    int is_set_ctx; /* --ctx given: with --backend mil it must equal the bundle's */
    const char *stops[GEN_CLI_MAX_STOPS];
    int n_stops;
    int truncate;
    const char *backend;   /* "cpu" (default) or "mil" (an ANE bundle through the interpreter) */
    const char *dump_dir;  /* --dump-layers: hidden state after each layer as .npy, or NULL */
} gen_cli_opts;

typedef struct gen_cli_loaded {
    tok_tokenizer *tok;
    qwen3_model *model;
    qwen3_state *state;
    gen_session *session;
    struct gen_mil *mil;          /* --backend mil (then model and state are NULL) */
    struct gen_layer_dump *dump;  /* --dump-layers, written by gen_cli_unload */
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

/* Sampling defaults from DIR/generation_config.json (HF's: do_sample false
 * means greedy; temperature, top_k, top_p, min_p, repetition_penalty) for
 * every parameter the command line did not set. A missing file is fine; a
 * malformed one is an error naming the file and field. */
nc_status gen_cli_apply_generation_config(gen_cli_opts *o, nc_error *err);

/* Loads tokenizer, weights and a KV cache of o->ctx tokens (--backend mil:
 * the bundle's programs, its fixed context). */
nc_status gen_cli_load(const gen_cli_opts *o, gen_cli_loaded *l, nc_error *err);
void gen_cli_unload(gen_cli_loaded *l);
/* The loaded engine's context in tokens (either backend). */
int gen_cli_ctx(const gen_cli_loaded *l);

/* "prompt 12 tokens (3 cached), 512.3 tok/s | generated 64 tokens, 40.1 tok/s |
 * stop: length", no newline */
void gen_cli_print_timings(FILE *f, const gen_result *r);

#endif
