/* `nectar quantize -m DIR --type q8|q4 -o OUT`: a block-quantized copy of a
 * Qwen3 folder (src/models/quant_write.c) that run, chat, bench and serve load
 * like the original; the format is in docs/performance.md. The result is
 * loaded once before reporting success, so a folder that would not load is
 * an error here rather than later. */
#include <stdio.h>
#include <string.h>

#include "base/timer.h"
#include "commands.h"
#include "models/quant_write.h"
#include "models/qwen3.h"

static int usage(FILE *f) {
    fprintf(f, "usage: nectar quantize -m DIR --type q8|q4 -o OUT\n"
               "Writes OUT/model.safetensors with every matrix (embedding and LM head included)\n"
               "in 32-weight blocks with an fp16 scale: q8 = int8 codes (34 bytes per block),\n"
               "q4 = 4-bit codes (18 bytes per block); norms stay as they are. The other files\n"
               "of DIR (config, tokenizer) are copied.\n");
    return f == stdout ? 0 : 2;
}

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *type = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(stdout);
        else if (!strcmp(a, "-m") && has_val)
            in = argv[++i];
        else if (!strcmp(a, "-o") && has_val)
            out = argv[++i];
        else if (!strcmp(a, "--type") && has_val)
            type = argv[++i];
        else {
            cli_failf("quantize: unknown or incomplete option '%s'", a);
            return usage(stderr);
        }
    }
    if (!in || !out || !type) {
        cli_failf("quantize: -m DIR, --type and -o OUT are required");
        return usage(stderr);
    }
    cpu_wtype t = !strcmp(type, "q8") ? CPU_W_Q8 : !strcmp(type, "q4") ? CPU_W_Q4 : CPU_W_N;
    if (t == CPU_W_N) return cli_failf("quantize: --type must be q8 or q4, not '%s'", type);
    nc_error err;
    quant_write_stats s;
    double t0 = nc_now_s();
    if (quant_write_model(in, out, t, &s, &err) != NC_OK) return cli_fail(&err);
    qwen3_model *m;
    qwen3_load_options opt = {1};
    if (qwen3_load(out, &opt, &m, &err) != NC_OK) return cli_fail(&err);
    qwen3_free(m);
    printf("%s -> %s: %d matrices as %s, %d tensors copied; %.1f MiB -> %.1f MiB in %.1f s\n", in,
           out, s.n_quantized, type, s.n_copied, (double)s.bytes_in / (1 << 20),
           (double)s.bytes_out / (1 << 20), nc_now_s() - t0);
    return 0;
}
