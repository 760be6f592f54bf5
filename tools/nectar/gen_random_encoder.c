/* `nectar gen-random --like modernbert-base|modernbert-large|mmbert-base OUT`:
 * the encoder shapes of gen-random (cmd_gen_random.c hands over when --like
 * names one), written by src/models/modernbert_random.c. */
#include <stdio.h>
#include <string.h>

#include "base/mmap.h"
#include "base/timer.h"
#include "commands.h"
#include "gen_random_common.h"
#include "models/modernbert_random.h"

int gen_random_is_encoder(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--like")) return modernbert_random_knows(argv[i + 1]);
    return 0;
}

int gen_random_encoder_usage(void) {
    fprintf(stderr,
            "usage: nectar gen-random --like %s OUT\n"
            "         [--dtype bf16|f16|f32] [--seed S] [--tokenizer DIR] [-t N]\n"
            "Writes a ModernBertForMaskedLM folder with random weights at the real shape;\n"
            "tokenizer.json is copied from DIR when given.\n",
            modernbert_random_names());
    return 2;
}

int gen_random_encoder(const gen_random_args *a) {
    if (a->tok_dir && !nc_is_dir(a->tok_dir))
        return cli_failf("%s: tokenizer folder not found", a->tok_dir);
    int rc = gen_random_make_out(a->out);
    if (rc) return rc;
    double t0 = nc_now_s();
    nc_error err = {0};
    size_t bytes = 0;
    if (modernbert_random_write(a->like, a->out, a->dt, a->seed, a->threads, &bytes, &err) != NC_OK)
        return cli_fail(&err);
    static const char *const files[] = {"tokenizer.json"};
    if (a->tok_dir && (rc = gen_random_copy_tokenizer(a->tok_dir, a->out, files, 1, 1))) return rc;
    fprintf(stderr, "wrote %s: %s shape, %s, %.2f GB in %.1f s%s\n", a->out, a->like, a->dtype,
            (double)bytes / 1e9, nc_now_s() - t0, a->tok_dir ? "" : " (no tokenizer copied)");
    return 0;
}
