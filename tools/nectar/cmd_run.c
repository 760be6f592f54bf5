/* `nectar run`: raw-text completion. The prompt is tokenized as is (no chat
 * template), only the continuation is streamed to stdout, and load time and
 * prompt/generation speed go to stderr so stdout stays pure text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "commands.h"
#include "gen_cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: nectar run -m DIR (-p TEXT | -f FILE) [options]\n\n"
               "Generates a continuation of a raw-text prompt (no chat template) and streams it\n"
               "to stdout; load time and tokens/s go to stderr.\n\n"
               "  -p, --prompt TEXT         the prompt\n"
               "  -f, --file FILE           read the prompt from FILE (exact bytes)\n");
    gen_cli_print_options(f);
    fprintf(f, "\nDefaults: -n 256; sampling from the model's generation_config.json where it\n"
               "has a value (do_sample false = greedy), else Qwen3's non-thinking settings\n"
               "(temp 0.7, top-p 0.8, top-k 20). --temp 0 is greedy.\n");
}

static int write_piece(void *user, gen_text_kind kind, const char *text, size_t len) {
    (void)user;
    (void)kind;
    if (len) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
    return 0;
}

int cmd_run(int argc, char **argv) {
    gen_cli_opts o;
    gen_cli_defaults(&o, 256);
    const char *prompt = NULL, *prompt_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        int r = gen_cli_parse(argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r > 0) continue;
        if ((!strcmp(a, "-p") || !strcmp(a, "--prompt") || !strcmp(a, "-f") ||
             !strcmp(a, "--file")) &&
            i + 1 >= argc)
            return cli_failf("%s needs a value", a), 2;
        if (!strcmp(a, "-p") || !strcmp(a, "--prompt"))
            prompt = argv[++i];
        else if (!strcmp(a, "-f") || !strcmp(a, "--file"))
            prompt_file = argv[++i];
        else
            return cli_failf("run: unknown option '%s' (try nectar run --help)", a), 2;
    }
    if (!o.model_dir) return cli_failf("run: no model given (-m DIR)"), 2;
    if (!prompt == !prompt_file) return cli_failf("run: give exactly one of -p TEXT or -f FILE"), 2;

    nc_error err = {0};
    engine_options eo; /* checks --ane-device / NECTAR_ANE_DEVICE: a usage error */
    if (gen_cli_engine_options(&o, &eo, &err) != NC_OK) return cli_fail(&err), 2;
    if (gen_cli_apply_generation_config(&o, &err) != NC_OK) return cli_fail(&err);
    char *file_text = NULL;
    size_t prompt_len = prompt ? strlen(prompt) : 0;
    if (prompt_file && nc_read_file(prompt_file, &file_text, &prompt_len, &err) != NC_OK)
        return cli_fail(&err);
    if (prompt_file) prompt = file_text;

    gen_cli_loaded l;
    if (gen_cli_load(&o, &l, &err) != NC_OK) {
        free(file_text);
        return cli_fail(&err);
    }
    int32_t *ids = NULL;
    size_t n_ids = 0;
    nc_status st = tok_encode(l.tok, prompt, prompt_len, &ids, &n_ids, &err);
    free(file_text);
    gen_result res;
    if (st == NC_OK) {
        gen_request req = {o.sampling, o.max_new_tokens, o.stops, o.n_stops, o.truncate, 0, 0};
        gen_callbacks cb = {NULL, write_piece, NULL};
        st = gen_generate(l.seq, ids, (int)n_ids, &req, &cb, &res, &err);
        if (st == NC_ERR_RANGE && !o.truncate) nc_fail_prefix(&err, "run");
    }
    free(ids);
    int rc = 0;
    if (st != NC_OK) {
        if (st == NC_ERR_RANGE && !o.truncate)
            fprintf(stderr, "nectar: error: %s (use a larger --ctx, a smaller -n, or --truncate)\n",
                    err.msg);
        else
            cli_fail(&err);
        rc = 1;
    } else {
        /* the continuation does not end with a newline; stderr starts one */
        fprintf(stderr, "\nload %.2f s | ", l.load_s);
        gen_cli_print_timings(stderr, &res);
        if (o.sampling.temperature > 0)
            fprintf(stderr, " | seed %llu", (unsigned long long)o.sampling.seed);
        fputc('\n', stderr);
    }
    gen_cli_unload(&l);
    return rc;
}
