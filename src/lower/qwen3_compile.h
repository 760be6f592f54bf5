/* `nectar compile`: a Qwen3 checkpoint folder to an ANE bundle folder
 * (layer_NN/model.mil + weights/weight.bin per layer, head/ for the final
 * norm + LM head, the tokenizer files, manifest.json). The bundle is built
 * in a temporary sibling folder and renamed into place at the end, so a
 * failure leaves nothing (and an existing bundle is replaced only then). */
#ifndef NC_LOWER_QWEN3_COMPILE_H
#define NC_LOWER_QWEN3_COMPILE_H

#include <stddef.h>

#include "bundle/forms_rules.h"
#include "lower/palettize.h"
#include "lower/qwen3_lower.h"
#include "lower/weights_fp16.h"

typedef struct lower_compile_options {
    const char *model_dir, *out_dir;
    int ctx;    /* <= 0: min(max_position_embeddings, 512) */
    int n_seqs; /* 0: 32, 64, 128 (those <= ctx) */
    int seqs[LOWER_MAX_BUCKETS];
    int lm_head_on_cpu;
    int kernels_per_layer;           /* 0: 4 (lower_plan.kernels_per_layer) */
    int n_threads;                   /* <= 0: all cores */
    int progress;                    /* 1: progress bar on stderr; -1: when stderr is a tty */
    lower_palette_options palettize; /* bits 0: fp16 projections and LM head */
    int q35_prefill;                 /* Qwen3.5 prefill_sS: a lower_q35_prefill_form */
    lower_forms forms;               /* the lowering forms (0: each one's default) */
} lower_compile_options;

typedef struct lower_compile_report {
    double seconds;
    size_t bundle_bytes;
    int n_programs, n_functions, kernels_per_token, ctx;
    lower_fp16_stats fp16;
    lower_palette_stats palettize;
} lower_compile_report;

nc_status lower_qwen3_compile(const lower_compile_options *opt, lower_compile_report *rep,
                              nc_error *err);

/* The model of folder dir as the rules between forms see it (forms_rules.h:
 * Qwen3.5, Gemma 3's windows, the LM head's rows unless lm_head_on_cpu),
 * from its config: what `compile --ane-profile` passes the recommendation. */
nc_status lower_forms_model_of_dir(const char *dir, int lm_head_on_cpu, lower_forms_model *m,
                                   nc_error *err);

#endif
