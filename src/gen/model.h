/* A model ready to generate: the engine (engine_open through the one
 * backend table), the tokenizer, the end-of-sequence set and the sampling
 * defaults of the folder, each built once here. `nectar run`, `chat` and
 * `serve` open one; the per-sequence pipeline (generate.h) reads it. */
#ifndef NC_GEN_MODEL_H
#define NC_GEN_MODEL_H

#include "engine/engine.h"
#include "gen/sampler.h"
#include "gen/speculative.h"
#include "text/tokenizer.h"

#define GEN_MAX_EOS 16

typedef struct gen_model {
    engine *e;
    tok_tokenizer *tok;
    /* The ids that end a sequence: the config's (config.json +
     * generation_config.json, read by the engine) plus <|im_end|> where
     * the vocabulary has it (chat turns end with <|im_end|> even when the
     * config names another eos); <|endoftext|> only when the config names
     * no eos at all. */
    int32_t eos[GEN_MAX_EOS];
    int n_eos;
    char model_id[256]; /* the folder's name: what /v1/models reports */
    /* Speculative decoding (gen_spec_attach): the draft model, or NULL */
    struct gen_model *draft;
    gen_spec_options spec;
} gen_model;

/* Opens dir on backend ("cpu", "mil", "ane"; "script": the test engine).
 * opt may be NULL. */
nc_status gen_model_open(const char *backend, const char *dir, const engine_options *opt,
                         gen_model **out, nc_error *err);
void gen_model_close(gen_model *m);

int gen_model_is_eos(const gen_model *m, int32_t id);

/* Fills m->eos from m->e and m->tok (gen_model_open does; for a model put
 * together by hand, as tests do). */
void gen_model_build_eos(gen_model *m);

/* Which sampling parameters a caller set itself (the rest come from the
 * folder, then from the caller's base): a parameter's bit is 1 << its row in
 * the sampling parameter table (gen/sampling_params.h, gen_param.set). */
enum {
    GEN_SET_TEMPERATURE = 1,
    GEN_SET_TOP_K = 2,
    GEN_SET_TOP_P = 4,
    GEN_SET_MIN_P = 8,
    GEN_SET_REPEAT_PENALTY = 16
};

/* The one place sampling defaults come from a model folder:
 * DIR/generation_config.json (HF's: do_sample false means greedy;
 * temperature, top_k, top_p, min_p, repetition_penalty) replaces every
 * parameter of *p whose bit is not in `set`. A missing file changes
 * nothing; a malformed one is an error naming the file and field. */
nc_status gen_sampling_from_folder(const char *dir, unsigned set, gen_sampler_params *p,
                                   nc_error *err);

#endif
