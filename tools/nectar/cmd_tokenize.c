/* `nectar tokenize`: text -> token ids on one line, or with --decode ids ->
 * text. Needs only the tokenizer files, so it works on a folder that holds
 * nothing else (or on a tokenizer.json path). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "commands.h"
#include "text/tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: nectar tokenize -m DIR (-p TEXT | -f FILE) [--decode] [--skip-special]\n\n"
               "Prints the token ids of the text on one line, separated by spaces (no BOS/EOS;\n"
               "special tokens written in the text, such as <|im_end|>, become their ids).\n\n"
               "  -m, --model DIR       model folder with tokenizer.json (or the file itself)\n"
               "  -p, --prompt TEXT     the text\n"
               "  -f, --file FILE       read the text from FILE (exact bytes)\n"
               "  --decode              the input is ids (separated by spaces, commas or\n"
               "                        newlines): print the text they stand for, as is\n"
               "  --skip-special        with --decode: leave out special tokens\n");
}

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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes_value = !strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-p") ||
                          !strcmp(a, "--prompt") || !strcmp(a, "-f") || !strcmp(a, "--file");
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (takes_value && i + 1 >= argc) {
            return cli_failf("tokenize: %s needs a value", a), 2;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            model = argv[++i];
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            prompt = argv[++i];
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            file = argv[++i];
        } else if (!strcmp(a, "--decode")) {
            decode = 1;
        } else if (!strcmp(a, "--skip-special")) {
            skip_special = 1;
        } else {
            return cli_failf("tokenize: unknown option '%s' (try nectar tokenize --help)", a), 2;
        }
    }
    if (!model) return cli_failf("tokenize: no model given (-m DIR)"), 2;
    if (!prompt == !file) return cli_failf("tokenize: give exactly one of -p TEXT or -f FILE"), 2;

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
    int rc = decode ? print_text(t, input, len, skip_special) : print_ids(t, input, len);
    tok_free(t);
    free(file_text);
    if (rc == 0 && fflush(stdout) != 0)
        rc = cli_failf("tokenize: writing output: %s", strerror(errno));
    return rc;
}
