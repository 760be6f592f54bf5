/* `nectar run`: raw-text completion. The prompt is tokenized as is (no chat
 * template), only the continuation is streamed to stdout, and load time and
 * prompt/generation speed go to stderr so stdout stays pure text. It runs
 * on the public API (nectar.h) alone, as a program using libnectar would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "cli_opts.h"
#include "commands.h"
#include "gen_cli.h"
#include "nectar.h"

static int write_piece(void *user, int32_t token, const char *text, size_t len) {
    (void)user;
    (void)token;
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
    const cli_opt own[] = {CLI_OPT("-p", "--prompt", CLI_STRING, "TEXT", "the prompt", &prompt),
                           CLI_OPT("-f", "--file", CLI_STRING, "FILE",
                                   "read the prompt from FILE (exact bytes)", &prompt_file),
                           CLI_ENDROW};
    cli_opt shared[GEN_CLI_N_ROWS];
    gen_cli_table(&o, shared);
    const cli_command cmd = {
        .name = "run",
        .usage = "-m DIR (-p TEXT | -f FILE) [options]",
        .about = "Generates a continuation of a raw-text prompt (no chat template) and streams it\n"
                 "to stdout; load time and tokens/s go to stderr. Defaults: -n 256; sampling\n"
                 "from the model's generation_config.json where it has a value (do_sample\n"
                 "false = greedy), else Qwen3's non-thinking settings (temp 0.7, top-p 0.8,\n"
                 "top-k 20). --temp 0 is greedy.\n",
        .opts = {own, shared}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc == CLI_GO) rc = gen_cli_finish(&cmd, &o);
    if (rc != CLI_GO) return rc;
    if (!prompt == !prompt_file)
        return cli_usage_error(&cmd, "give exactly one of -p TEXT or -f FILE");

    nc_error err = {0};
    gen_cli_api a; /* checks --ane-device / NECTAR_ANE_DEVICE: a usage error */
    if (gen_cli_api_options(&o, &a, &err) != NC_OK) return cli_usage_error(&cmd, "%s", err.msg);
    char *file_text = NULL;
    size_t prompt_len = prompt ? strlen(prompt) : 0;
    if (prompt_file && nc_read_file(prompt_file, &file_text, &prompt_len, &err) != NC_OK)
        return cli_fail(&err);
    if (prompt_file) prompt = file_text;

    if (gen_cli_api_load(&o, &a, &err) != NC_OK) {
        free(file_text);
        return cli_fail(&err);
    }
    int32_t *ids = NULL;
    size_t n_ids = 0;
    nc_finish finish;
    nc_status st =
        nc_tokenize(nc_model_tokenizer(a.model), prompt, prompt_len, 0, &ids, &n_ids, &err);
    free(file_text);
    if (st == NC_OK)
        st = nc_generate_tokens(a.seq, ids, n_ids, o.max_new_tokens, a.sampling, write_piece, NULL,
                                &finish, &err);
    nc_free(ids);
    rc = 0;
    if (st != NC_OK) {
        if (st == NC_ERR_RANGE && !o.truncate)
            fprintf(stderr,
                    "nectar: error: run: %s (use a larger --ctx, a smaller -n, or --truncate)\n",
                    err.msg);
        else
            cli_fail(&err);
        rc = 1;
    } else {
        /* the continuation does not end with a newline; stderr starts one */
        fprintf(stderr, "\nload %.2f s | ", a.load_s);
        gen_cli_timings t = gen_cli_timings_of_sequence(a.seq, finish);
        gen_cli_print_timings(stderr, &t);
        if (nc_sampling_get(a.sampling, "temperature") > 0)
            fprintf(stderr, " | seed %llu", (unsigned long long)o.sampling.seed);
        fputc('\n', stderr);
    }
    gen_cli_api_unload(&a);
    return rc;
}
