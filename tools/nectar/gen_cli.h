/* What `nectar run` and `nectar chat` share: the model/sampling options, their
 * parsing with one-line errors, and loading a model folder into a
 * generation session (tokenizer, weights, KV cache). */
#ifndef NECTAR_CLI_GEN_CLI_H
#define NECTAR_CLI_GEN_CLI_H

#include <stdio.h>

#include "cli_opts.h"
#include "engine/engine.h"
#include "engine/engine_options.h"
#include "gen/generate.h"
#include "gen/sampling_params.h"
#include "nectar.h"
#include "text/tokenizer.h"

#define GEN_CLI_MAX_STOPS 16

/* The engine options every command that opens a model shares: --backend
 * (the engine table's backends), --ane-device and --kv, whose rows
 * (engine/engine_options.h) also name their environment variables.
 * GEN_CLI_BACKEND_OPTS(&b) are the --backend and --ane-device rows,
 * GEN_CLI_KV_OPT(&b) the --kv row (decoders). */
typedef struct gen_cli_backend {
    int backend_index, is_set_device;
    const char *device; /* --ane-device as given */
    const char *kv;     /* --kv as given, or NULL */
    const char *ane_cpu; /* --ane-cpu as given, or NULL */
} gen_cli_backend;

#define GEN_CLI_BACKEND_OPTS(b)                                                                    \
    CLI_OPT(NULL, "--backend", CLI_CHOICE, engine_backend_choices(),                               \
            "cpu (default); mil or ane: -m names an ANE bundle (nectar compile), run by\n"         \
            "the MIL interpreter in fp16 (mil) or on the Neural Engine (ane)",                     \
            &(b)->backend_index, .choices = engine_backend_choices()),                             \
        CLI_OPT(NULL, "--ane-device", CLI_STRING, "fake|real",                                     \
                "with --backend ane: real (the default; macOS), or fake: the whole ANE\n"          \
                "request path against a device backed by the MIL interpreter (any OS);\n"          \
                "fake:reject=RULE,.. refuses constructs (`--ane-device help`);\n"                  \
                "default from $NECTAR_ANE_DEVICE",                                                 \
                &(b)->device, .seen = &(b)->is_set_device),                                        \
        CLI_OPT(NULL, "--ane-cpu", CLI_STRING, "kernels|interp",                                   \
                "with --backend ane: a layer the device refuses runs whole on the CPU\n"           \
                "engine's kernels (kernels, the default), or its refused kernels in the\n"         \
                "MIL interpreter (interp); default from $NECTAR_ANE_CPU",                          \
                &(b)->ane_cpu)
#define GEN_CLI_KV_OPT(b)                                                                          \
    CLI_OPT(NULL, "--kv", CLI_STRING, "f32|f16",                                                   \
            "the KV cache's element type on the cpu engine (default: f32, or\n"                    \
            "$NECTAR_KV)",                                                                         \
            &(b)->kv)

/* Speculative decoding's options, shared by run, chat and serve:
 * GEN_CLI_DRAFT_OPTS(&d) are their table rows (llama.cpp's names). */
typedef struct gen_cli_draft {
    const char *dir;
    int max, min, backend_index;
    float p_min;
} gen_cli_draft;

#define GEN_CLI_DRAFT_OPTS(d)                                                                      \
    CLI_OPT(NULL, "--draft", CLI_STRING, "DIR",                                                    \
            "speculative decoding: DIR, a smaller model with the same tokenizer, proposes\n"       \
            "tokens the model checks in one step (greedy output unchanged)",                       \
            &(d)->dir),                                                                            \
        CLI_OPT(NULL, "--draft-max", CLI_INT, "N", "tokens the draft proposes per step (default 6)", \
                &(d)->max, .min = 1, .max = GEN_SPEC_DRAFT_CAP),                                   \
        CLI_OPT(NULL, "--draft-min", CLI_INT, "N",                                                 \
                "fewer proposed than N: a plain step instead (default 0)", &(d)->min, .min = 0,    \
                .max = GEN_SPEC_DRAFT_CAP),                                                        \
        CLI_OPT(NULL, "--draft-p-min", CLI_FLOAT, "P",                                             \
                "stop proposing when the draft's top probability is below P (default 0)",          \
                &(d)->p_min, .lo = 0, .hi = 1),                                                    \
        CLI_OPT(NULL, "--draft-backend", CLI_CHOICE, engine_backend_choices(),                     \
                "where the draft runs (default cpu; mil or ane: --draft names a bundle,\n"         \
                "on the --ane-device)",                                                            \
                &(d)->backend_index, .choices = engine_backend_choices())

/* Defaults (no draft, --draft-max 6). */
void gen_cli_draft_defaults(gen_cli_draft *d);
/* With --draft: opens the draft beside m (its engine options: eo's, a
 * bundle keeping its own context). Without: NC_OK, nothing done. */
nc_status gen_cli_draft_attach(const gen_cli_draft *d, gen_model *m, const engine_options *eo,
                               nc_error *err);

/* The backend's name ("cpu", "mil", "ane"). */
const char *gen_cli_backend_name(const gen_cli_backend *b);

/* The one builder of engine options on the command line: threads and the
 * context as the command parsed them (0: the engine's), then each engine
 * option with a flag here (--kv, --ane-device) or, when the flag is not
 * given, its environment variable, through the option table's parser (a bad
 * value is one line naming the flag or the variable). `--ane-device help`
 * prints the settings and exits. With backend ane, a real device this build
 * cannot reach is refused: callers report a failure as a usage error. The
 * kernels are not tuned here: see gen_cli_tune_decoder_kernels. */
nc_status gen_cli_engine(const gen_cli_backend *b, int n_threads, int ctx, engine_options *eo,
                         nc_error *err);

/* On the cpu backend, the kernels chosen by measurement for the decoder
 * slots (cli_env_tune_kernels: the first command on a machine measures,
 * ~1 s). Only commands that open a decoder call it: an encoder's layers
 * run on its own packed panels (or AMX tiles), its heads and inputs under 8
 * tokens on the table's defaults, which every candidate equals but for
 * speed (docs/performance.md). */
nc_status gen_cli_tune_decoder_kernels(const gen_cli_backend *b, int n_threads, nc_error *err);

typedef struct gen_cli_opts {
    const char *model_dir;
    int max_new_tokens;
    int ctx;
    int n_threads;
    int has_seed;
    int64_t seed; /* --seed as parsed (sampling.seed once finished) */
    gen_sampler_params sampling;
    unsigned set; /* GEN_SET_*: given on the command line (folder defaults must not override) */
    int seen[GEN_N_PARAMS]; /* each sampling parameter's flag was given */
    int is_set_ctx; /* --ctx given: with a bundle it must equal the bundle's */
    gen_cli_backend be;
    const char *stops[GEN_CLI_MAX_STOPS];
    int n_stops;
    int truncate;
    const char *backend;  /* "cpu" (default), "mil" or "ane": -m names an ANE bundle */
    const char *dump_dir; /* --dump-layers: hidden state after each layer as .npy, or NULL */
    gen_cli_draft draft;  /* --draft and its options */
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

/* The shared options as cli_opts rows pointing into o, ended by
 * CLI_ENDROW; rows has room for GEN_CLI_N_ROWS. */
#define GEN_CLI_N_ROWS 28
void gen_cli_table(gen_cli_opts *o, cli_opt *rows);

/* After cli_parse: what the table cannot check (an empty stop string) and
 * the derived fields (backend, device, seed, set). CLI_GO or an exit code. */
int gen_cli_finish(const cli_command *c, gen_cli_opts *o);

/* Sampling defaults from the model folder (gen_sampling_from_folder) for
 * every parameter the command line did not set. */
nc_status gen_cli_apply_generation_config(gen_cli_opts *o, nc_error *err);

/* The engine options of run and chat's command line (gen_cli_engine). */
nc_status gen_cli_engine_options(const gen_cli_opts *o, engine_options *eo, nc_error *err);

/* Opens the model through the engine seam (o->backend) and one sequence of
 * o->ctx tokens (a bundle: its fixed context). */
nc_status gen_cli_load(const gen_cli_opts *o, gen_cli_loaded *l, nc_error *err);
void gen_cli_unload(gen_cli_loaded *l);
/* The loaded sequence's context in tokens. */
int gen_cli_ctx(const gen_cli_loaded *l);

/* The model, sequence and sampling of the command line through the public
 * API (nectar.h), as `nectar run` uses them. */
typedef struct gen_cli_api {
    engine_options eo; /* the command line's (gen_cli_engine) */
    nc_model *model;
    nc_sequence *seq;
    nc_sampling *sampling;
    struct gen_layer_dump *dump; /* --dump-layers, written by gen_cli_api_unload */
    double load_s;
} gen_cli_api;

/* The engine options of the command line (gen_cli_engine_options) for
 * gen_cli_api_load: a failure is a usage error. */
nc_status gen_cli_api_options(const gen_cli_opts *o, gen_cli_api *a, nc_error *err);

/* After gen_cli_api_options: opens the model and one sequence, hooks
 * --dump-layers, and makes the sampling: the command's defaults, then the
 * folder's generation_config.json, then what the command line set. */
nc_status gen_cli_api_load(const gen_cli_opts *o, gen_cli_api *a, nc_error *err);
void gen_cli_api_unload(gen_cli_api *a);

/* What a finished generation reports on stderr. */
typedef struct gen_cli_timings {
    int n_prompt, n_prompt_cached, n_truncated, n_generated;
    double prompt_s, gen_s;
    const char *finish;
    int n_drafted, n_accepted, n_draft_steps; /* speculative decoding */
} gen_cli_timings;

gen_cli_timings gen_cli_timings_of_result(const gen_result *r);
gen_cli_timings gen_cli_timings_of_sequence(const nc_sequence *s, nc_finish f);

/* "prompt 12 tokens (3 cached), 512.3 tok/s | generated 64 tokens, 40.1 tok/s |
 * stop: length", then with a draft "| draft 40 proposed, 32 accepted (80%),
 * 3.1 tokens/step", no newline */
void gen_cli_print_timings(FILE *f, const gen_cli_timings *t);

#endif
