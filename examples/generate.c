/* generate MODEL_DIR PROMPT N: prints the greedy continuation of PROMPT, up
 * to N tokens, as the model streams it (--ids: the token ids, one a line).
 * Uses only <nectar.h>:
 *     cc generate.c $(pkg-config --cflags --libs nectar) -o generate */
#include <nectar.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int print_text(void *user, int32_t token, const char *text, size_t len) {
    (void)user;
    (void)token;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0; /* non-zero would stop the generation here */
}

static int print_id(void *user, int32_t token, const char *text, size_t len) {
    (void)user;
    (void)text;
    (void)len;
    if (token >= 0) printf("%d\n", (int)token);
    return 0;
}

int main(int argc, char **argv) {
    int ids = argc > 1 && !strcmp(argv[1], "--ids");
    if (argc != 4 + ids) {
        fprintf(stderr, "usage: generate [--ids] MODEL_DIR PROMPT N\n");
        return 2;
    }
    const char *dir = argv[1 + ids], *prompt = argv[2 + ids];
    int n = atoi(argv[3 + ids]);
    nc_error err;
    nc_model *m = NULL;
    nc_sequence *seq = NULL;
    nc_finish why;
    nc_status st = nc_model_open(dir, "cpu", NULL, &m, &err);
    if (st == NC_OK) st = nc_sequence_new(m, 0, &seq, &err);
    /* sampling NULL: greedy */
    if (st == NC_OK)
        st = nc_generate(seq, prompt, n, NULL, ids ? print_id : print_text, NULL, &why, &err);
    if (st == NC_OK && !ids) printf("\n");
    if (st != NC_OK) fprintf(stderr, "generate: %s\n", err.msg);
    nc_sequence_free(seq);
    nc_model_free(m);
    return st == NC_OK ? 0 : 1;
}
