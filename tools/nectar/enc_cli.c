/* Shared plumbing of the encoder commands (see enc_cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "base/timer.h"
#include "commands.h"
#include "enc_cli.h"

#define DEFAULT_BATCH 8

void enc_cli_table(enc_cli_opts *o, cli_opt *rows) {
    const cli_opt t[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR",
                "ModernBERT-family folder (config, safetensors, tokenizer), or an encoder\n"
                "bundle with --backend mil or ane",
                &o->model, .required = 1),
        CLI_OPT("-p", "--prompt", CLI_STRING, "TEXT", "one input", &o->prompt),
        CLI_OPT("-f", "--file", CLI_STRING, "FILE", "one input per line (empty lines skipped)",
                &o->file),
        CLI_OPT(NULL, "--batch", CLI_INT, "N", "inputs per forward pass (default 8)", &o->batch,
                .min = 1, .max = 4096),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "threads (default: all cores)", &o->threads,
                .min = 1, .max = 1024),
        GEN_CLI_BACKEND_OPTS(&o->be),
        CLI_ENDROW};
    _Static_assert(sizeof t / sizeof *t <= ENC_CLI_N_ROWS, "raise ENC_CLI_N_ROWS");
    memcpy(rows, t, sizeof t);
}

int enc_cli_finish(const cli_command *c, enc_cli_opts *o) {
    o->backend = gen_cli_backend_name(&o->be);
    if (!o->prompt == !o->file) return cli_usage_error(c, "give one of -p TEXT or -f FILE");
    nc_error err = {0};
    if (gen_cli_engine(&o->be, o->threads, 0, &o->eo, &err) != NC_OK)
        return cli_usage_error(c, "%s", err.msg);
    return CLI_GO;
}

/* One text per line (a final line without a newline counts; CR before LF
 * is dropped); empty lines are skipped. */
static int read_lines(enc_cli *c, const char *path) {
    char *buf;
    size_t len;
    nc_error err = {0};
    if (nc_read_file(path, &buf, &len, &err) != NC_OK) return cli_fail(&err);
    size_t cap = 16;
    c->texts = malloc(cap * sizeof *c->texts);
    for (size_t i = 0; i < len && c->texts;) {
        size_t j = i;
        while (j < len && buf[j] != '\n')
            j++;
        size_t e = j > i && buf[j - 1] == '\r' ? j - 1 : j;
        if (e > i) {
            if (c->n_texts == cap) {
                char **more = realloc(c->texts, 2 * cap * sizeof *more);
                if (!more) break;
                c->texts = more;
                cap *= 2;
            }
            char *s = malloc(e - i + 1);
            if (!s) break;
            memcpy(s, buf + i, e - i);
            s[e - i] = '\0';
            c->texts[c->n_texts++] = s;
        }
        i = j + 1;
    }
    free(buf);
    if (!c->texts) return cli_failf("%s: out of memory reading %s", c->cmd, path);
    if (c->n_texts == 0) return cli_failf("%s: %s: no input lines", c->cmd, path);
    return 0;
}

int enc_cli_open(enc_cli *c, const char *cmd, const enc_cli_opts *o) {
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    nc_error err = {0};
    if (o->prompt) {
        c->texts = malloc(sizeof *c->texts);
        if (!c->texts || !(c->texts[0] = strdup(o->prompt)))
            return cli_failf("%s: out of memory", cmd);
        c->n_texts = 1;
    } else if (read_lines(c, o->file)) {
        return 1;
    }
    if (tok_load(o->model, &c->tok, &err) != NC_OK) return cli_fail(&err);
    /* mil, ane: -m is an encoder bundle (nectar compile) */
    const char *kind = NULL;
    if (engine_kind_for_encoder(o->backend ? o->backend : "cpu", o->model, &kind, &err) != NC_OK ||
        engine_open(kind, o->model, &o->eo, &c->e, &err) != NC_OK)
        return cli_fail(&err);
    c->cfg = c->e->encoder;
    c->batch = o->batch > 0 ? o->batch : DEFAULT_BATCH;
    c->t0 = nc_now_s();
    return 0;
}

void enc_cli_close(enc_cli *c) {
    for (size_t i = 0; i < c->n_texts; i++)
        free(c->texts[i]);
    free(c->texts);
    free(c->ids);
    free(c->mask);
    tok_free(c->tok);
    engine_close(c->e);
}

int enc_cli_make_batch(enc_cli *c, size_t i0, size_t i1) {
    const modernbert_config *cfg = c->cfg;
    size_t n = i1 - i0, seq = 1;
    int32_t **rows = calloc(n, sizeof *rows);
    size_t *lens = calloc(n, sizeof *lens);
    int rc = rows && lens ? 0 : cli_failf("%s: out of memory", c->cmd);
    for (size_t i = 0; i < n && !rc; i++) {
        nc_error err = {0};
        const char *text = c->texts[i0 + i];
        if (tok_encode_special(c->tok, text, strlen(text), &rows[i], &lens[i], &err) != NC_OK)
            rc = cli_failf("%s: input %zu: %s", c->cmd, i0 + i + 1, err.msg);
        else if (lens[i] == 0)
            rc = cli_failf("%s: input %zu gives no tokens", c->cmd, i0 + i + 1);
        else if (lens[i] > (size_t)cfg->max_position_embeddings)
            rc = cli_failf("%s: input %zu has %zu tokens, more than the model's %d", c->cmd,
                           i0 + i + 1, lens[i], cfg->max_position_embeddings);
        else if (lens[i] > seq)
            seq = lens[i];
    }
    if (!rc) {
        free(c->ids);
        free(c->mask);
        c->ids = malloc(n * seq * sizeof *c->ids);
        c->mask = calloc(n * seq, sizeof *c->mask);
        if (!c->ids || !c->mask) rc = cli_failf("%s: out of memory", c->cmd);
    }
    int32_t pad = cfg->pad_token_id >= 0 ? cfg->pad_token_id : 0;
    for (size_t i = 0; i < n && !rc; i++)
        for (size_t t = 0; t < seq; t++) {
            c->ids[i * seq + t] = t < lens[i] ? rows[i][t] : pad;
            c->mask[i * seq + t] = t < lens[i];
        }
    for (size_t i = 0; rows && i < n; i++)
        free(rows[i]);
    free(rows);
    free(lens);
    c->seq = (int)seq;
    return rc;
}

int enc_cli_forward(enc_cli *c, modernbert_io *io) {
    nc_error err = {0};
    io->ids = c->ids;
    io->mask = c->mask;
    io->seq = c->seq;
    if (engine_encode(c->e, io, &err) != NC_OK) return cli_fail(&err);
    for (int i = 0; i < io->batch * io->seq; i++)
        c->n_tokens += (size_t)c->mask[i];
    return 0;
}

void enc_cli_report(const enc_cli *c) {
    double dt = nc_now_s() - c->t0;
    if (dt <= 0) dt = 1e-9;
    fprintf(stderr, "%s: %zu inputs, %zu tokens in %.3f s (%.1f inputs/s, %.1f tokens/s)\n", c->cmd,
            c->n_texts, c->n_tokens, dt, (double)c->n_texts / dt, (double)c->n_tokens / dt);
}

void enc_cli_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p == '\r')
            fputs("\\r", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
