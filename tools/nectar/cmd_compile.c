/* `nectar compile`: lowers a Qwen3 checkpoint folder to an ANE bundle (MIL
 * programs + weight.bin per program + manifest.json); see docs/lowering.md.
 * Prints one summary line: time, size, programs, kernels per token, and
 * the fp16 conversion's saturation count. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_encoder.h"
#include "commands.h"
#include "lower/modernbert_compile.h"
#include "lower/qwen3_compile.h"

static void usage(FILE *f) {
    fprintf(f, "usage: nectar compile -m DIR -o BUNDLE [options]\n\n"
               "Lowers a Qwen3 model folder to an ANE bundle: one MIL program per layer\n"
               "(4 kernels per sequence bucket) and one for the LM head, fp16 weights in\n"
               "weights/weight.bin, manifest.json. Written atomically.\n\n"
               "  -m, --model DIR       Hugging Face Qwen3 folder\n"
               "  -o, --out BUNDLE      bundle folder to write (an older bundle is replaced)\n"
               "      --buckets A,B,..  prompt sequence buckets, multiples of 32 (default 32,64,128)\n"
               "      --ctx N           KV cache length, a multiple of 32 (default min(max pos, 512))\n"
               "      --lm-head ane|cpu where the final norm + LM head run (default ane)\n"
               "  -t, --threads N       conversion threads (default: all cores)\n"
               "      --progress        always draw the progress bar (default: when a tty)\n");
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || (*end && *end != ',') || v < lo || v > hi)
        return cli_failf("%s: '%s' is not an integer in [%d, %d]", opt, s, lo, hi), -1;
    *out = (int)v;
    return (int)(end - s);
}

int cmd_compile(int argc, char **argv) {
    /* encoder folders have their own lowering (cmd_compile_encoder.c) */
    const char *model = cmd_encoder_model_arg(argc, argv);
    if (model && lower_is_modernbert_dir(model)) return cmd_compile_encoder(argc, argv);
    lower_compile_options o;
    memset(&o, 0, sizeof o);
    o.progress = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 0;
        if (!strcmp(a, "--progress")) {
            o.progress = 1;
            continue;
        }
        if (i + 1 >= argc) return cli_failf("compile: %s needs a value (try --help)", a), 2;
        const char *v = argv[++i];
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            o.model_dir = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--out"))
            o.out_dir = v;
        else if (!strcmp(a, "--ctx")) {
            int n = parse_int(a, v, 32, 1 << 20, &o.ctx);
            if (n < 0) return 2;
            if (v[n]) return cli_failf("--ctx: '%s' is not an integer", v), 2;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (parse_int(a, v, 1, 1024, &o.n_threads) < 0) return 2;
        } else if (!strcmp(a, "--lm-head")) {
            if (strcmp(v, "ane") && strcmp(v, "cpu"))
                return cli_failf("--lm-head: '%s' is not ane or cpu", v), 2;
            o.lm_head_on_cpu = !strcmp(v, "cpu");
        } else if (!strcmp(a, "--buckets")) {
            if (cli_parse_int_list(a, v, 32, 1 << 20, LOWER_MAX_BUCKETS, o.seqs, &o.n_seqs) < 0)
                return 2;
        } else
            return cli_failf("compile: unknown option '%s' (try nectar compile --help)", a), 2;
    }
    if (!o.model_dir) return cli_failf("compile: no model given (-m DIR)"), 2;
    if (!o.out_dir) return cli_failf("compile: no output given (-o BUNDLE)"), 2;
    nc_error err = {0};
    lower_compile_report r;
    if (lower_qwen3_compile(&o, &r, &err) != NC_OK) return cli_fail(&err);
    printf("compiled %s -> %s in %.2f s: %d programs, %d functions, %.1f MB, ctx %d, "
           "%d kernels per token; fp16 weights: %zu values, %zu saturated to +/-65504, "
           "%zu non-finite\n",
           o.model_dir, o.out_dir, r.seconds, r.n_programs, r.n_functions,
           r.bundle_bytes / 1e6, r.ctx, r.kernels_per_token, r.fp16.n_values, r.fp16.n_saturated,
           r.fp16.n_nonfinite);
    return 0;
}
