/* Inside the public API: what an nc_model and an nc_tokenizer hold. A
 * decoder is a gen_model (the engine seam's backend, its tokenizer, its
 * end-of-sequence set); an encoder is an engine and a tokenizer. The calls
 * of include/nectar.h dispatch on which. */
#ifndef NC_API_MODEL_H
#define NC_API_MODEL_H

#include "engine/engine.h"
#include "gen/model.h"
#include "models/modernbert_st.h"
#include "nectar.h"
#include "text/tokenizer.h"

struct nc_tokenizer {
    tok_tokenizer *tok;
};

struct nc_model {
    nc_model_kind kind;
    char *dir;              /* the folder or bundle opened (generation_config.json) */
    nc_tokenizer tokenizer; /* the decoder's is gm->tok, borrowed */
    gen_model *gm;          /* decoder */
    int ctx;                /* decoder: the context of new sequences (0: the engine's) */
    engine *enc;            /* encoder */
    modernbert_st st;       /* encoder: its sentence-transformers settings */
};

/* nc_model_open with its options already as the engine's (the command
 * line's, built by the same option table as nc_model_open's key=value
 * ones); backend NULL: cpu. */
nc_status api_model_open(const char *path, const char *backend, const engine_options *opt,
                         nc_model **out, nc_error *err);

/* Speculative decoding: dir opened on backend (NULL: cpu) as decoder m's
 * draft (gen_spec_attach; eo: m's engine options). */
nc_status api_model_set_draft(nc_model *m, const char *dir, const char *backend,
                              const engine_options *eo, const gen_spec_options *so,
                              nc_error *err);

#endif
