/* Inside the public API: what an nc_model and an nc_tokenizer hold. A model
 * is a decoder (Qwen3 weights, or an ANE bundle run by the MIL interpreter)
 * or an encoder (ModernBERT family, on the CPU or from a bundle); the
 * calls of include/nectar.h dispatch on which. */
#ifndef NC_API_MODEL_H
#define NC_API_MODEL_H

#include "lower/modernbert_run.h"
#include "models/modernbert.h"
#include "models/qwen3.h"
#include "nectar.h"
#include "text/tokenizer.h"

struct nc_tokenizer {
    tok_tokenizer *tok;
};

struct nc_model {
    nc_model_kind kind;
    nc_tokenizer tokenizer;
    int n_threads;
    /* decoder */
    qwen3_model *qwen3;  /* "cpu" */
    char *bundle;        /* "mil": the bundle folder (each sequence opens its programs) */
    int ctx;             /* default context of new sequences */
    int n_vocab, n_embd; /* "mil": from the manifest */
    /* encoder */
    modernbert_model *enc; /* the CPU engine, or the bundle's host engine */
    mb_run *enc_run;       /* "mil": the bundle runner */
};

/* The encoder's forward pass on whichever engine the model has. */
nc_status api_encoder_forward(nc_model *m, const modernbert_io *io, nc_error *err);

#endif
