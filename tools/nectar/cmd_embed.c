/* `nectar embed`: pooled sentence vectors from a ModernBERT-family encoder
 * (CLS token or mean over real tokens of the final hidden states, optionally
 * L2-normalised), for one text or a file of lines run in padded batches;
 * written as JSON or as a float32 .npy [inputs, hidden]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "commands.h"
#include "enc_cli.h"
#include "io/npy.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: nectar embed -m DIR (-p TEXT | -f FILE) [options]\n\n"
            "Pooled vectors of the encoder's final hidden states, one per input.\n\n"
            "  -m, --model DIR       ModernBERT / mmBERT folder (config, safetensors, tokenizer)\n"
            "  -p, --prompt TEXT     one input\n"
            "  -f, --file FILE       one input per line (empty lines skipped)\n"
            "      --pooling cls|mean  default: the config's classifier_pooling\n"
            "      --normalize       scale each vector to unit L2 norm\n"
            "      --format json|npy  default json; npy needs -o\n"
            "  -o, --out FILE        write there (atomically) instead of stdout\n"
            "      --batch N         inputs per forward pass (default 8)\n"
            "  -t, --threads N       default: all cores\n"
            "      --backend cpu|mil  mil: -m names an encoder bundle (nectar compile),\n"
            "                        run in the MIL interpreter (docs/encoders-ane.md)\n"
            "      --bench BxL,...   instead: time the forward pass on random ids at these\n"
            "                        batch x length shapes (e.g. 1x96,3x64); --runs N (20)\n"
            "Throughput goes to stderr.\n");
}

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

int cmd_embed(int argc, char **argv) {
    enc_cli_opts o = {0};
    const char *out = NULL, *format = "json", *pooling_name = NULL, *bench = NULL;
    int normalize = 0, runs = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = enc_cli_parse("embed", argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 0;
        if (!strcmp(a, "--normalize")) {
            normalize = 1;
            continue;
        }
        if (i + 1 >= argc) return cli_failf("embed: unknown option or missing value: %s", a), 2;
        if (!strcmp(a, "-o") || !strcmp(a, "--out"))
            out = argv[++i];
        else if (!strcmp(a, "--format"))
            format = argv[++i];
        else if (!strcmp(a, "--pooling"))
            pooling_name = argv[++i];
        else if (!strcmp(a, "--bench"))
            bench = argv[++i];
        else if (!strcmp(a, "--runs")) {
            runs = atoi(argv[++i]);
            if (runs < 1 || runs > 100000) return cli_failf("embed: --runs must be >= 1"), 2;
        } else
            return cli_failf("embed: unknown option %s (try --help)", a), 2;
    }
    if (bench) {
        if (!o.model) return cli_failf("embed: -m DIR is required (try --help)"), 2;
        return enc_cli_bench(o.model, bench, runs, o.threads);
    }
    int is_npy = !strcmp(format, "npy");
    if (!is_npy && strcmp(format, "json"))
        return cli_failf("embed: --format '%s' is not json or npy", format), 2;
    if (is_npy && !out) return cli_failf("embed: --format npy needs -o FILE"), 2;
    int pooling = -1;
    if (pooling_name && !strcmp(pooling_name, "cls"))
        pooling = MODERNBERT_POOL_CLS;
    else if (pooling_name && !strcmp(pooling_name, "mean"))
        pooling = MODERNBERT_POOL_MEAN;
    else if (pooling_name)
        return cli_failf("embed: --pooling '%s' is not cls or mean", pooling_name), 2;

    enc_cli c;
    int rc = enc_cli_open(&c, "embed", &o);
    const modernbert_config *cfg = c.cfg;
    int d = cfg ? cfg->hidden_size : 0;
    float *vecs = rc ? NULL : malloc(c.n_texts * (size_t)d * sizeof *vecs);
    if (!rc && !vecs) rc = cli_failf("embed: out of memory");
    for (size_t i0 = 0; !rc && i0 < c.n_texts; i0 += (size_t)c.batch) {
        size_t i1 = i0 + (size_t)c.batch < c.n_texts ? i0 + (size_t)c.batch : c.n_texts;
        rc = enc_cli_make_batch(&c, i0, i1);
        modernbert_io io = {
            .batch = (int)(i1 - i0), .pooled = vecs + i0 * (size_t)d, .pooling = pooling};
        if (!rc) rc = enc_cli_forward(&c, &io);
    }
    if (!rc && normalize)
        for (size_t i = 0; i < c.n_texts; i++) {
            float *v = vecs + i * (size_t)d;
            double s = 0;
            for (int j = 0; j < d; j++)
                s += (double)v[j] * v[j];
            float inv = s > 0 ? (float)(1.0 / sqrt(s)) : 0.0f;
            for (int j = 0; j < d; j++)
                v[j] *= inv;
        }
    if (!rc) {
        enc_cli_report(&c);
        if (pooling < 0) pooling = (int)cfg->pooling;
        rc = is_npy ? write_npy(out, vecs, c.n_texts, d)
                    : write_json(out, vecs, c.n_texts, d,
                                 pooling == MODERNBERT_POOL_CLS ? "cls" : "mean", normalize);
    }
    free(vecs);
    enc_cli_close(&c);
    return rc;
}
