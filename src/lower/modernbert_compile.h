/* `nectar compile` for ModernBERT-family encoder folders: one program
 * (encoder/model.mil + weights/weight.bin) holding a function per
 * (batch, sequence) shape, the tokenizer files and manifest.json. Built in a
 * temporary sibling folder and renamed into place, so a failure leaves
 * nothing and an older bundle is replaced only once the new one is whole. */
#ifndef NC_LOWER_MODERNBERT_COMPILE_H
#define NC_LOWER_MODERNBERT_COMPILE_H

#include <stddef.h>

#include "lower/modernbert_lower.h"
#include "lower/palettize.h"
#include "lower/weights_fp16.h"

typedef struct mb_compile_options {
    const char *model_dir, *out_dir;
    int n_seqs, seqs[MB_LOWER_MAX_SHAPES];       /* 0: 64, 96, 128 (those <= max positions) */
    int n_batches, batches[MB_LOWER_MAX_SHAPES]; /* 0: 1, 3 */
    int n_threads;                               /* fp16 conversion; <= 0: all cores */
    mb_lower_options lower;                      /* tests only; zero for the real graph */
    lower_palette_options palettize;             /* bits 0: fp16 projections */
} mb_compile_options;

typedef struct mb_compile_report {
    double seconds;
    size_t bundle_bytes;
    int n_functions, crossings_per_call;
    lower_fp16_stats fp16;
    lower_palette_stats palettize;
} mb_compile_report;

nc_status lower_modernbert_compile(const mb_compile_options *opt, mb_compile_report *rep,
                                   nc_error *err);

#endif
