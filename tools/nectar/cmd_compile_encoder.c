/* `nectar compile` for encoder folders (model_type "modernbert"): one ANE
 * program with a function per (batch, sequence) shape; see
 * docs/encoders-ane.md. cmd_compile.c hands over when -m names an encoder. */
#include <stdio.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_outdir.h"
#include "cmd_compile_palettize.h"
#include "cmd_encoder.h"
#include "commands.h"
#include "decide/decision_lower.h"
#include "lower/modernbert_compile.h"

const char *cmd_encoder_model_arg(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) return argv[i + 1];
    return NULL;
}

int cmd_compile_encoder(int argc, char **argv) {
    mb_compile_options o;
    memset(&o, 0, sizeof o);
    int progress = 0;
    cmd_palettize_args pa;
    cmd_palettize_args_init(&pa);
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR", "Hugging Face ModernBERT folder", &o.model_dir,
                .required = 1),
        CLI_OPT("-o", "--out", CLI_STRING, "BUNDLE",
                "bundle folder to write (an older bundle is replaced)", &o.out_dir, .required = 1),
        CLI_OPT(NULL, "--buckets", CLI_INT_LIST, "A,B,..",
                "sequence lengths, multiples of 32 (default 64,96,128)", o.seqs, .min = 32,
                .max = 1 << 16, .count = &o.n_seqs, .cap = MB_LOWER_MAX_SHAPES),
        CLI_OPT(NULL, "--batches", CLI_INT_LIST, "A,B,..", "batch sizes (default 1,3)", o.batches,
                .min = 1, .max = 64, .count = &o.n_batches, .cap = MB_LOWER_MAX_SHAPES),
        CLI_OPT(NULL, "--no-concat", CLI_FLAG, NULL,
                "no concat op (flagged ane-concat): attention's output\n"
                "projection applied per head and summed",
                &o.lower.no_concat),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "conversion threads (default: all cores)",
                &o.n_threads, .min = 1, .max = 1024),
        CLI_OPT(NULL, "--progress", CLI_FLAG, NULL,
                "accepted for the Qwen3 path's sake; no bar here", &progress),
        CMD_PALETTIZE_OPTS(&pa),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "compile",
        .usage = "-m ENCODER_DIR -o BUNDLE [options]",
        .about =
            "Lowers a ModernBERT-family encoder (ModernBERT, mmBERT) to an ANE bundle: one MIL\n"
            "program holding every encoder layer and the final norm, one function per\n"
            "(batch, sequence) shape sharing one weight.bin. Embeddings and heads stay on the "
            "CPU.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if ((rc = cmd_palettize_options(&cmd, &pa, &o.palettize))) return rc;
    nc_error err = {0};
    mb_compile_report r;
    /* a decision folder (encoder + decision.json): the region grows the head */
    int decision = decision_is_dir(o.model_dir);
    cli_outdir_sweep(o.out_dir); /* what a killed compile left */
    if ((decision ? decision_compile(&o, &r, &err) : lower_modernbert_compile(&o, &r, &err)) !=
        NC_OK)
        return cli_fail(&err);
    if (decision)
        fprintf(stderr, "decision region: encoder layers + type addition + head layers on the NE; "
               "tokenizer, embeddings and the tail on the CPU (%s/partition.json)\n",
               o.out_dir);
    fprintf(stderr, "compiled %s -> %s in %.2f s: 1 encoder program, %d functions, %.1f MB, "
           "%d CPU<->ANE buffer copies per call; fp16 weights: %zu values, %zu saturated to "
           "+/-65504, %zu non-finite\n",
           o.model_dir, o.out_dir, r.seconds, r.n_functions, r.bundle_bytes / 1e6,
           r.crossings_per_call, r.fp16.n_values, r.fp16.n_saturated, r.fp16.n_nonfinite);
    cmd_palettize_print(&o.palettize, &r.palettize);
    return 0;
}
