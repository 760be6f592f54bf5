/* `nectar tokenize`: text -> token ids on one line, or with --decode ids ->
 * text. Needs only the tokenizer files, so it works on a folder that holds
 * nothing else (or on a tokenizer.json path). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "cli_opts.h"
#include "commands.h"
#include "text/tokenizer.h"

static int is_sep(char c) {
    return c != '\0' && strchr(" \t\r\n,[]", c) != NULL;
}

/* Parses "1 2, 3\n4" (or "[1, 2]") into ids; every id must name a token. */
static int parse_ids(const tok_tokenizer *t, const char *s, size_t len, int32_t **out,
                     size_t *n_out) {
    size_t n = 0, cap = 64;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return cli_failf("tokenize: out of memory");
    size_t i = 0;
    while (i < len) {
        if (is_sep(s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j == i || j - i > 9 || (j < len && !is_sep(s[j]))) {
            size_t k = j;
            while (k < len && k - i < 40 && !is_sep(s[k]))
                k++;
            free(ids);
            return cli_failf("tokenize --decode: '%.*s' is not a token id",
                             (int)(k > i ? k - i : 1), s + i);
        }
        long id = strtol(s + i, NULL, 10);
        if (!tok_token_bytes(t, (int32_t)id, NULL)) {
            free(ids);
            return cli_failf("tokenize --decode: id %ld is not in the vocabulary (size %d)", id,
                             tok_vocab_size(t));
        }
        if (n == cap) {
            int32_t *more = realloc(ids, 2 * cap * sizeof *ids);
            if (!more) {
                free(ids);
                return cli_failf("tokenize: out of memory");
            }
            ids = more;
            cap *= 2;
        }
        ids[n++] = (int32_t)id;
        i = j;
    }
    *out = ids;
    *n_out = n;
    return 0;
}

static int print_ids(const tok_tokenizer *t, const char *text, size_t len) {
    int32_t *ids;
    size_t n;
    nc_error err;
    if (tok_encode(t, text, len, &ids, &n, &err) != NC_OK) return cli_fail(&err);
    for (size_t i = 0; i < n; i++)
        printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    free(ids);
    return 0;
}

static int print_text(const tok_tokenizer *t, const char *input, size_t len, int skip_special) {
    int32_t *ids = NULL;
    size_t n = 0, out_len;
    char *text;
    nc_error err;
    if (parse_ids(t, input, len, &ids, &n) != 0) return 1;
    nc_status st = tok_decode(t, ids, n, skip_special, &text, &out_len, &err);
    free(ids);
    if (st != NC_OK) return cli_fail(&err);
    fwrite(text, 1, out_len, stdout);
    free(text);
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL;
    int decode = 0, skip_special = 0;
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR",
                "model folder with tokenizer.json (or the file itself)", &model, .required = 1),
        CLI_OPT("-p", "--prompt", CLI_STRING, "TEXT", "the text", &prompt),
        CLI_OPT("-f", "--file", CLI_STRING, "FILE", "read the text from FILE (exact bytes)", &file),
        CLI_OPT(NULL, "--decode", CLI_FLAG, NULL,
                "the input is ids (separated by spaces, commas or\n"
                "newlines): print the text they stand for, as is",
                &decode),
        CLI_OPT(NULL, "--skip-special", CLI_FLAG, NULL, "with --decode: leave out special tokens",
                &skip_special),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "tokenize",
        .usage = "-m DIR (-p TEXT | -f FILE) [--decode] [--skip-special]",
        .about = "Prints the token ids of the text on one line, separated by spaces (no BOS/EOS;\n"
                 "special tokens written in the text, such as <|im_end|>, become their ids).\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if (!prompt == !file) return cli_usage_error(&cmd, "give exactly one of -p TEXT or -f FILE");

    nc_error err;
    char *file_text = NULL;
    size_t len = prompt ? strlen(prompt) : 0;
    if (file && nc_read_file(file, &file_text, &len, &err) != NC_OK) return cli_fail(&err);
    tok_tokenizer *t;
    if (tok_load(model, &t, &err) != NC_OK) {
        free(file_text);
        return cli_fail(&err);
    }
    const char *input = file ? file_text : prompt;
    rc = decode ? print_text(t, input, len, skip_special) : print_ids(t, input, len);
    tok_free(t);
    free(file_text);
    if (rc == 0 && fflush(stdout) != 0)
        rc = cli_failf("tokenize: writing output: %s", strerror(errno));
    return rc;
}
