/* `nectar gen-random --like modernbert-base|modernbert-large|mmbert-base OUT`:
 * the encoder shapes of gen-random (cmd_gen_random.c hands over when --like
 * names one), written by src/models/modernbert_random.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mmap.h"
#include "base/timer.h"
#include "commands.h"
#include "enc_cli.h"
#include "io/hf_weights.h"
#include "models/modernbert_random.h"

int gen_random_is_encoder(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--like")) return modernbert_random_knows(argv[i + 1]);
    return 0;
}

static int usage(void) {
    fprintf(stderr,
            "usage: nectar gen-random --like %s OUT\n"
            "         [--dtype bf16|f16|f32] [--seed S] [--tokenizer DIR] [-t N]\n"
            "Writes a ModernBertForMaskedLM folder with random weights at the real shape;\n"
            "tokenizer.json is copied from DIR when given.\n",
            modernbert_random_names());
    return 2;
}

int gen_random_encoder(int argc, char **argv) {
    const char *like = NULL, *out = NULL, *dtype = "bf16", *tok_dir = NULL;
    uint64_t seed = 1;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--like") && has_val)
            like = argv[++i];
        else if (!strcmp(a, "--dtype") && has_val)
            dtype = argv[++i];
        else if (!strcmp(a, "--seed") && has_val)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--tokenizer") && has_val)
            tok_dir = argv[++i];
        else if (!strcmp(a, "-t") && has_val)
            threads = atoi(argv[++i]);
        else if (a[0] == '-')
            return cli_failf("gen-random: unknown or incomplete option '%s'", a), usage();
        else if (!out)
            out = a;
        else
            return cli_failf("gen-random: unexpected argument '%s'", a), usage();
    }
    if (!like || !out) return usage();
    st_dtype dt = !strcmp(dtype, "bf16")  ? ST_BF16
                  : !strcmp(dtype, "f16") ? ST_F16
                  : !strcmp(dtype, "f32") ? ST_F32
                                          : ST_N_DTYPES;
    if (dt == ST_N_DTYPES)
        return cli_failf("gen-random: --dtype must be bf16, f16 or f32, not '%s'", dtype);
    if (tok_dir && !nc_is_dir(tok_dir)) return cli_failf("%s: tokenizer folder not found", tok_dir);
    if (mkdir(out, 0777) != 0 && errno != EEXIST)
        return cli_failf("%s: cannot create folder: %s", out, strerror(errno));
    if (!nc_is_dir(out)) return cli_failf("%s: not a folder", out);
    double t0 = nc_now_s();
    nc_error err = {0};
    size_t bytes = 0;
    if (modernbert_random_write(like, out, dt, seed, threads, &bytes, &err) != NC_OK)
        return cli_fail(&err);
    if (tok_dir) {
        char src[4096], dst[4096], *data;
        size_t len;
        hf_path_join(src, sizeof src, tok_dir, "tokenizer.json");
        hf_path_join(dst, sizeof dst, out, "tokenizer.json");
        if (nc_read_file(src, &data, &len, &err) != NC_OK) return cli_fail(&err);
        nc_status st = nc_write_file_atomic(dst, data, len, &err);
        free(data);
        if (st != NC_OK) return cli_fail(&err);
    }
    fprintf(stderr, "wrote %s: %s shape, %s, %.2f GB in %.1f s%s\n", out, like, dtype,
            (double)bytes / 1e9, nc_now_s() - t0, tok_dir ? "" : " (no tokenizer copied)");
    return 0;
}
