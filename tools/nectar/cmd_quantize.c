/* `nectar quantize -m DIR --type q8|q4 -o OUT`: a block-quantized copy of a
 * Qwen3 or Qwen3.5 folder (src/models/quant_write.c) that run, chat, bench
 * and serve load like the original; the format is in docs/performance.md.
 * The input is checked first (a text generator, not quantized already), so
 * a refused folder leaves nothing behind; the output is written into a
 * temporary sibling, loaded once by the cpu engine its model_type picks,
 * and only then renamed into place (an older model folder there is
 * replaced), so a failure never leaves a partial OUT. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "base/timer.h"
#include "cli_opts.h"
#include "cli_outdir.h"
#include "cli_quantized.h"
#include "commands.h"
#include "engine/engine.h"
#include "io/hf_weights.h"
#include "models/quant_write.h"

/* The input must be a text generator's folder whose matrices are not
 * nectar's q8/q4 blocks already (2-D U8 tensors). */
static nc_status check_input(const char *in, nc_error *err) {
    const char *kind;
    NC_TRY(engine_kind_for_decoder("cpu", in, &kind, err));
    int n_quant;
    NC_TRY(cli_count_quantized(in, &n_quant, err));
    if (n_quant)
        return nc_fail(err, NC_ERR_INVALID,
                       "%s: already quantized (%d matrices are q8/q4 blocks); quantize the "
                       "original folder",
                       in, n_quant);
    return NC_OK;
}

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
    nc_error err = {0};
    quant_write_stats s;
    double t0 = nc_now_s();
    char tmp[PATH_MAX];
    if (cli_outdir_begin(in, out, tmp, sizeof tmp, &err) != NC_OK) return cli_fail(&err);
    if (check_input(in, &err) != NC_OK) {
        cli_outdir_abort(tmp);
        return cli_fail(&err);
    }
    const char *kind;
    engine *m = NULL;
    engine_options opt = {.n_threads = 1};
    nc_status st = quant_write_model(in, tmp, types[type], &s, &err);
    if (st == NC_OK) st = engine_kind_for_decoder("cpu", tmp, &kind, &err);
    if (st == NC_OK) st = engine_open(kind, tmp, &opt, &m, &err);
    engine_close(m);
    if (st == NC_OK) st = cli_outdir_commit(tmp, out, &err);
    if (st != NC_OK) {
        cli_outdir_abort(tmp);
        return cli_fail(&err);
    }
    fprintf(stderr, "%s -> %s: %d matrices as %s, %d tensors copied; %.1f MiB -> %.1f MiB in %.1f s\n", in,
           out, s.n_quantized, names[type], s.n_copied, (double)s.bytes_in / (1 << 20),
           (double)s.bytes_out / (1 << 20), nc_now_s() - t0);
    return 0;
}
