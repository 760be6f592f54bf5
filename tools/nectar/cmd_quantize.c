/* `nectar quantize -m DIR --type q8|q4 -o OUT`: a block-quantized copy of a
 * Qwen3 or Qwen3.5 folder (src/models/quant_write.c) that run, chat, bench
 * and serve load like the original; the format is in docs/performance.md.
 * The result is loaded once, by the cpu engine its model_type picks, before
 * reporting success, so a folder that would not load is an error here
 * rather than later. */
#include <stdio.h>
#include <string.h>

#include "base/timer.h"
#include "cli_opts.h"
#include "commands.h"
#include "engine/engine.h"
#include "models/quant_write.h"

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int type = 0;
    static const char *const names[] = {"q8", "q4"};
    static const cpu_wtype types[] = {CPU_W_Q8, CPU_W_Q4};
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR", "Qwen3 or Qwen3.5 model folder to quantize",
                &in, .required = 1),
        CLI_OPT(NULL, "--type", CLI_CHOICE, "q8|q4", "block format", &type, .choices = "q8|q4",
                .required = 1),
        CLI_OPT("-o", "--out", CLI_STRING, "OUT", "folder to write (not DIR)", &out, .required = 1),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "quantize",
        .usage = "-m DIR --type q8|q4 -o OUT",
        .about = "Writes OUT/model.safetensors with every matrix (embedding and LM head included)\n"
                 "in 32-weight blocks with an fp16 scale: q8 = int8 codes (34 bytes per block),\n"
                 "q4 = 4-bit codes (18 bytes per block); norms stay as they are. The other files\n"
                 "of DIR (config, tokenizer) are copied.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    nc_error err;
    quant_write_stats s;
    double t0 = nc_now_s();
    if (quant_write_model(in, out, types[type], &s, &err) != NC_OK) return cli_fail(&err);
    const char *kind;
    engine *m;
    engine_options opt = {.n_threads = 1};
    if (engine_kind_for_decoder("cpu", out, &kind, &err) != NC_OK ||
        engine_open(kind, out, &opt, &m, &err) != NC_OK)
        return cli_fail(&err);
    engine_close(m);
    printf("%s -> %s: %d matrices as %s, %d tensors copied; %.1f MiB -> %.1f MiB in %.1f s\n", in,
           out, s.n_quantized, names[type], s.n_copied, (double)s.bytes_in / (1 << 20),
           (double)s.bytes_out / (1 << 20), nc_now_s() - t0);
    return 0;
}
