/* `nectar embed`: pooled sentence vectors from a ModernBERT-family encoder
 * (the final hidden states pooled as a sentence-transformers folder's
 * 1_Pooling says, else the config's classifier_pooling, or --pooling;
 * L2-normalised by --normalize or the folder's Normalize module), for one
 * text or a file of lines run in padded batches; written as JSON or as a
 * float32 .npy [inputs, hidden]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "cli_opts.h"
#include "commands.h"
#include "enc_cli.h"
#include "io/npy.h"
#include "models/modernbert_st.h"
#include "nectar.h"

static int write_json(const char *out, const float *v, size_t n, int d, const char *pooling,
                      int normalized) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = out ? open_memstream(&buf, &len) : stdout;
    if (!f) return cli_failf("embed: out of memory");
    fprintf(f, "{\"pooling\": \"%s\", \"normalized\": %s, \"dim\": %d, \"embeddings\": [\n",
            pooling, normalized ? "true" : "false", d);
    for (size_t i = 0; i < n; i++) {
        fputs("  [", f);
        for (int j = 0; j < d; j++)
            fprintf(f, "%s%.9g", j ? ", " : "", (double)v[i * (size_t)d + (size_t)j]);
        fprintf(f, "]%s\n", i + 1 < n ? "," : "");
    }
    fputs("]}\n", f);
    if (!out) return fflush(stdout) ? cli_failf("embed: writing stdout failed") : 0;
    fclose(f);
    nc_error err = {0};
    int rc = nc_write_file_atomic(out, buf, len, &err) != NC_OK ? cli_fail(&err) : 0;
    free(buf);
    return rc;
}

static int write_npy(const char *out, const float *v, size_t n, int d) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", out) >= (int)sizeof tmp)
        return cli_failf("embed: output path is too long");
    int64_t shape[2] = {(int64_t)n, d};
    nc_error err = {0};
    if (nc_npy_write(tmp, NC_NPY_F32, 2, shape, v, &err) != NC_OK) {
        remove(tmp);
        return cli_fail(&err);
    }
    if (rename(tmp, out)) {
        remove(tmp);
        return cli_failf("embed: %s: cannot write the file", out);
    }
    return 0;
}

/* All texts through nc_embed_batch (the folder's sentence-transformers
 * settings, prompts and truncation included) into vecs[n_texts * d]. */
static int embed_as_st(const enc_cli_opts *o, const enc_cli *c, int normalize, float *vecs,
                       size_t d) {
    char threads[32];
    snprintf(threads, sizeof threads, "threads=%d", o->threads);
    const char *opts[] = {threads, NULL};
    nc_model *m = NULL;
    nc_error err = {0};
    nc_embed_options eo = {normalize, c->batch, NULL, NULL};
    nc_status st = nc_model_open(o->model, "cpu", opts, &m, &err);
    if (st == NC_OK)
        st = nc_embed_batch(m, (const char *const *)c->texts, c->n_texts, &eo, vecs, c->n_texts * d,
                            NULL, &err);
    nc_model_free(m);
    return st == NC_OK ? 0 : cli_fail(&err);
}

int cmd_embed(int argc, char **argv) {
    enc_cli_opts o = {0};
    const char *out = NULL, *bench = NULL;
    int normalize = 0, runs = 20, is_npy = 0, pooling_index = -1;
    const cli_opt own[] = {
        CLI_OPT(NULL, "--pooling", CLI_CHOICE, "MODE",
                "cls, mean, max, lasttoken, mean_sqrt_len_tokens or weightedmean\n"
                "(default: the folder's 1_Pooling, else the config's classifier_pooling)",
                &pooling_index,
                .choices = "cls|mean|max|lasttoken|mean_sqrt_len_tokens|weightedmean"),
        CLI_OPT(NULL, "--normalize", CLI_FLAG, NULL, "scale each vector to unit L2 norm",
                &normalize),
        CLI_OPT(NULL, "--format", CLI_CHOICE, "json|npy", "default json; npy needs -o", &is_npy,
                .choices = "json|npy"),
        CLI_OPT("-o", "--out", CLI_STRING, "FILE", "write there (atomically) instead of stdout",
                &out),
        CLI_OPT(NULL, "--bench", CLI_STRING, "BxL,...",
                "instead: time the forward pass on random ids at these batch x length shapes\n"
                "(e.g. 1x96,3x64)",
                &bench),
        CLI_OPT(NULL, "--runs", CLI_INT, "N", "--bench repetitions (default 20)", &runs, .min = 1,
                .max = 100000),
        CLI_ENDROW};
    cli_opt shared[ENC_CLI_N_ROWS];
    enc_cli_table(&o, shared);
    const cli_command cmd = {
        .name = "embed",
        .usage = "-m DIR (-p TEXT | -f FILE) [options]",
        .about = "Pooled sentence vectors (of the final hidden states, as sentence-transformers\n"
                 "pools them) from a ModernBERT-family encoder, one per input, as JSON or a\n"
                 "float32 .npy [inputs, hidden]. Throughput goes to stderr.\n",
        .opts = {shared, own}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if (bench) return enc_cli_bench(o.model, bench, runs, o.threads);
    rc = enc_cli_finish(&cmd, &o);
    if (rc != CLI_GO) return rc;
    if (is_npy && !out) return cli_usage_error(&cmd, "--format npy needs -o FILE");
    enc_cli c;
    rc = enc_cli_open(&c, "embed", &o);
    const modernbert_config *cfg = c.cfg;
    int d = cfg ? cfg->hidden_size : 0;
    modernbert_st st = {0};
    nc_error err = {0};
    if (!rc && modernbert_st_load(o.model,
                                  cfg->pooling == MODERNBERT_POOL_CLS ? MODERNBERT_ST_CLS
                                                                      : MODERNBERT_ST_MEAN,
                                  &st, &err) != NC_OK)
        rc = cli_fail(&err);
    int pooling = pooling_index >= 0 ? pooling_index : st.pooling; /* the choices' order */
    normalize = normalize || st.normalize;
    /* a sentence-transformers folder's default prompt and sequence limit
     * apply as SentenceTransformer.encode applies them: through the API's
     * batch path, which Python's encode and serve's /v1/embeddings run */
    int as_st = !rc && (st.default_prompt_name || st.max_seq_length);
    if (as_st && (pooling_index >= 0 || strcmp(o.backend, "cpu")))
        fprintf(stderr,
                "embed: note: with %s, %s's default prompt and sequence limit are not applied\n",
                pooling_index >= 0 ? "--pooling" : "--backend mil/ane", o.model);
    as_st = as_st && pooling_index < 0 && !strcmp(o.backend, "cpu");
    float *vecs = rc ? NULL : malloc(c.n_texts * (size_t)d * sizeof *vecs);
    if (!rc && !vecs) rc = cli_failf("embed: out of memory");
    if (as_st && !rc) rc = embed_as_st(&o, &c, normalize, vecs, (size_t)d);
    for (size_t i0 = 0; !as_st && !rc && i0 < c.n_texts; i0 += (size_t)c.batch) {
        size_t i1 = i0 + (size_t)c.batch < c.n_texts ? i0 + (size_t)c.batch : c.n_texts;
        rc = enc_cli_make_batch(&c, i0, i1);
        int b = (int)(i1 - i0);
        float *last = rc ? NULL : malloc((size_t)b * (size_t)c.seq * (size_t)d * sizeof *last);
        if (!rc && !last) rc = cli_failf("embed: out of memory");
        modernbert_io io = {.batch = b, .last = last, .pooling = -1};
        if (!rc) rc = enc_cli_forward(&c, &io);
        if (!rc)
            modernbert_st_pool(pooling, normalize, last, c.mask, NULL, b, c.seq, d,
                               vecs + i0 * (size_t)d);
        free(last);
    }
    if (!rc) {
        if (!as_st) enc_cli_report(&c);
        rc = is_npy ? write_npy(out, vecs, c.n_texts, d)
                    : write_json(out, vecs, c.n_texts, d, modernbert_st_pooling_name(pooling),
                                 normalize);
    }
    modernbert_st_free(&st);
    free(vecs);
    enc_cli_close(&c);
    return rc;
}
