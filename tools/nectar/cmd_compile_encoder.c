/* `nectar compile` for encoder folders (model_type "modernbert"): one ANE
 * program with a function per (batch, sequence) shape; see
 * docs/encoders-ane.md. cmd_compile.c hands over when -m names an encoder. */
#include <stdio.h>
#include <string.h>

#include "cmd_encoder.h"
#include "commands.h"
#include "lower/modernbert_compile.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: nectar compile -m ENCODER_DIR -o BUNDLE [options]\n\n"
        "Lowers a ModernBERT-family encoder (ModernBERT, mmBERT) to an ANE bundle: one MIL\n"
        "program holding every encoder layer and the final norm, one function per\n"
        "(batch, sequence) shape sharing one weight.bin. Embeddings and heads stay on the CPU.\n\n"
        "  -m, --model DIR       Hugging Face ModernBERT folder\n"
        "  -o, --out BUNDLE      bundle folder to write (an older bundle is replaced)\n"
        "      --buckets A,B,..  sequence lengths, multiples of 32 (default 64,96,128)\n"
        "      --batches A,B,..  batch sizes (default 1,3)\n"
        "      --no-concat       no concat op (flagged ane-concat): attention's output\n"
        "                        projection applied per head and summed\n"
        "  -t, --threads N       conversion threads (default: all cores)\n");
}

const char *cmd_encoder_model_arg(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) return argv[i + 1];
    return NULL;
}

int cmd_compile_encoder(int argc, char **argv) {
    mb_compile_options o;
    memset(&o, 0, sizeof o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 0;
        if (!strcmp(a, "--progress")) continue;
        if (!strcmp(a, "--no-concat")) {
            o.lower.no_concat = 1;
            continue;
        }
        if (i + 1 >= argc) return cli_failf("compile: %s needs a value (try --help)", a), 2;
        const char *v = argv[++i];
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            o.model_dir = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--out"))
            o.out_dir = v;
        else if (!strcmp(a, "--buckets")) {
            if (cli_parse_int_list(a, v, 32, 1 << 16, MB_LOWER_MAX_SHAPES, o.seqs, &o.n_seqs) < 0)
                return 2;
        } else if (!strcmp(a, "--batches")) {
            if (cli_parse_int_list(a, v, 1, 64, MB_LOWER_MAX_SHAPES, o.batches, &o.n_batches) < 0)
                return 2;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            int n = 0, t[MB_LOWER_MAX_SHAPES];
            if (cli_parse_int_list(a, v, 1, 1024, MB_LOWER_MAX_SHAPES, t, &n) < 0 || n != 1)
                return 2;
            o.n_threads = t[0];
        } else
            return cli_failf("compile: unknown option '%s' for an encoder (try nectar compile -m "
                             "DIR --help)",
                             a),
                   2;
    }
    if (!o.model_dir) return cli_failf("compile: no model given (-m DIR)"), 2;
    if (!o.out_dir) return cli_failf("compile: no output given (-o BUNDLE)"), 2;
    nc_error err = {0};
    mb_compile_report r;
    if (lower_modernbert_compile(&o, &r, &err) != NC_OK) return cli_fail(&err);
    printf("compiled %s -> %s in %.2f s: 1 encoder program, %d functions, %.1f MB, "
           "%d CPU<->ANE buffer copies per call; fp16 weights: %zu values, %zu saturated to "
           "+/-65504, %zu non-finite\n",
           o.model_dir, o.out_dir, r.seconds, r.n_functions, r.bundle_bytes / 1e6,
           r.crossings_per_call, r.fp16.n_values, r.fp16.n_saturated, r.fp16.n_nonfinite);
    return 0;
}
