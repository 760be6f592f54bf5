/* embed MODEL_DIR TEXT: prints the pooled embedding of TEXT under an
 * encoder (ModernBERT family), one number per line. Uses only <nectar.h>:
 *     cc embed.c $(pkg-config --cflags --libs nectar) -o embed */
#include <nectar.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: embed MODEL_DIR TEXT\n");
        return 2;
    }
    nc_error err;
    nc_model *m;
    if (nc_model_open(argv[1], "cpu", NULL, &m, &err) != NC_OK) {
        fprintf(stderr, "embed: %s\n", err.msg);
        return 1;
    }
    size_t n = (size_t)nc_model_embedding_size(m);
    float *v = malloc(n * sizeof *v);
    nc_status st = v ? nc_embed(m, argv[2], v, n, &err) : NC_ERR_NOMEM;
    if (st == NC_OK)
        for (size_t i = 0; i < n; i++)
            printf("%.8g\n", v[i]);
    else
        fprintf(stderr, "embed: %s\n", v ? err.msg : "out of memory");
    free(v);
    nc_model_free(m);
    return st == NC_OK ? 0 : 1;
}
