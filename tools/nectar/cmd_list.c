/* `nectar list`: the models of the Hugging Face cache (cli_model.h) that
 * nectar can run, one line each: the model id to pass to -m, the family
 * (the engine config.json picks), the size of the weights, and the formats
 * (the weights' dtypes, nectar's q8/q4 blocks, a sentence-transformers
 * folder). --all adds the cached models it cannot run, with the reason. */
#include <stdio.h>
#include <string.h>

#include "base/mmap.h"
#include "cli_model.h"
#include "cli_opts.h"
#include "commands.h"
#include "engine/engine.h"
#include "io/hf_cache.h"
#include "io/hf_weights.h"

typedef struct list_ctx {
    int all, n_shown, n_other;
} list_ctx;

/* "bf16", "f32+bf16", "q8/q4" (nectar's blocks: 2-D U8 tensors). */
static void formats_of(const hf_weights *w, char *out, size_t cap) {
    unsigned seen = 0;
    int quant = 0;
    for (int s = 0; s < w->n_shards; s++)
        for (int i = 0; i < w->shards[s]->n_tensors; i++) {
            const st_tensor *t = &w->shards[s]->tensors[i];
            if (t->dtype == ST_U8 && t->ndim == 2)
                quant = 1;
            else
                seen |= 1u << t->dtype;
        }
    out[0] = '\0';
    for (int d = 0; d < ST_N_DTYPES; d++)
        if (seen & (1u << d)) {
            size_t n = strlen(out);
            snprintf(out + n, cap - n, "%s%s", n ? "+" : "", st_dtype_name((st_dtype)d));
        }
    for (char *p = out; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    if (quant) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%sq8/q4 blocks", n ? ", " : "");
    }
}

static void visit(void *user, const char *id, const char *snap) {
    list_ctx *c = user;
    const char *kind = NULL;
    nc_error err = {0};
    hf_weights *w = NULL;
    nc_status st = engine_kind_for("cpu", snap, &kind, &err);
    if (st == NC_OK) st = hf_weights_open(snap, &w, &err);
    if (st != NC_OK) {
        c->n_other++;
        if (c->all) printf("%-40s %-12s %s\n", id, "-", err.msg);
        return;
    }
    const char *family = engine_kind_family(kind)->name;
    char formats[160], path[4096];
    formats_of(w, formats, sizeof formats);
    snprintf(path, sizeof path, "%s/modules.json", snap);
    if (nc_file_exists(path))
        strncat(formats, ", sentence-transformers", sizeof formats - strlen(formats) - 1);
    double b = (double)w->total_bytes;
    printf("%-40s %-12s %8.2f %s  %s\n", id, family, b >= 1e9 ? b / 1e9 : b / 1e6,
           b >= 1e9 ? "GB" : "MB", formats);
    hf_weights_close(w);
    c->n_shown++;
}

int cmd_list(int argc, char **argv) {
    list_ctx c = {0};
    const cli_opt opts[] = {
        CLI_OPT(NULL, "--all", CLI_FLAG, NULL, "also the cached models nectar cannot run, and why",
                &c.all),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "list",
        .usage = "[--all]",
        .about = "The models of the Hugging Face cache nectar can run (pass the first column\n"
                 "to -m): family, weight size, formats. The cache is $HF_HUB_CACHE, else\n"
                 "$HF_HOME/hub, else ~/.cache/huggingface/hub, as huggingface_hub lays it out.\n"
                 "The summary goes to stderr.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    char cache[4096];
    cli_model_cache_dir(cache, sizeof cache);
    nc_error err = {0};
    if (hf_cache_list(cache, visit, &c, &err) != NC_OK) return cli_fail(&err);
    fprintf(stderr, "%d model%s nectar can run in %s", c.n_shown, c.n_shown == 1 ? "" : "s", cache);
    if (c.n_other && !c.all) fprintf(stderr, " (%d more it cannot: --all)", c.n_other);
    fprintf(stderr, "\n");
    return fflush(stdout) ? cli_failf("list: writing stdout failed") : 0;
}
