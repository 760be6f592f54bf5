/* `nectar run`: raw-text completion. The prompt is tokenized as is (no chat
 * template), only the continuation is streamed to stdout, and load time and
 * prompt/generation speed go to stderr so stdout stays pure text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "cli_opts.h"
#include "commands.h"
#include "gen_cli.h"

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
    engine_options eo; /* checks --ane-device / NECTAR_ANE_DEVICE: a usage error */
    if (gen_cli_engine_options(&o, &eo, &err) != NC_OK) return cli_usage_error(&cmd, "%s", err.msg);
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
    rc = 0;
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
