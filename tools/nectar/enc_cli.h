/* What `nectar embed`, `fill-mask` and `classify` share: opening an encoder
 * folder (model + tokenizer), reading the inputs (-p TEXT, or -f FILE with
 * one text per line), turning a run of them into a padded batch of token
 * ids with the tokenizer's special tokens, and the throughput line. */
#ifndef NECTAR_CLI_ENC_CLI_H
#define NECTAR_CLI_ENC_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "cli_opts.h"
#include "engine/engine.h"
#include "gen_cli.h"
#include "text/tokenizer.h"

typedef struct enc_cli {
    const char *cmd; /* "embed", ... for messages */
    engine *e;       /* an encoder engine (engine_open: modernbert-cpu, -mil) */
    const modernbert_config *cfg;
    tok_tokenizer *tok;
    char **texts;
    size_t n_texts;
    /* the current batch */
    int32_t *ids, *mask;
    int batch, seq;
    size_t n_tokens; /* real tokens run so far */
    double t0;
} enc_cli;

/* The options embed, fill-mask and classify share. */
typedef struct enc_cli_opts {
    const char *model, *prompt, *file;
    const char *backend; /* "cpu" (default), "mil" or "ane": -m names an encoder bundle */
    gen_cli_backend be;  /* --backend, --ane-device as run, chat, serve and bench */
    engine_options eo;   /* after enc_cli_finish: gen_cli_engine's */
    int threads, batch;
} enc_cli_opts;

/* Their cli_opts rows (-m, -p, -f, -t, --batch, --backend, --ane-device)
 * pointing into o, ended by CLI_ENDROW; rows has room for ENC_CLI_N_ROWS. */
#define ENC_CLI_N_ROWS 9
void enc_cli_table(enc_cli_opts *o, cli_opt *rows);

/* After cli_parse: exactly one of -p and -f, the backend's name and device
 * (a real ANE this build cannot reach is a usage error, as in run). CLI_GO
 * or the exit code. */
int enc_cli_finish(const cli_command *c, enc_cli_opts *o);

/* Loads the model and tokenizer and reads the inputs; prints the error and
 * returns 1 on failure (then enc_cli_close is still safe). */
int enc_cli_open(enc_cli *c, const char *cmd, const enc_cli_opts *o);
void enc_cli_close(enc_cli *c);

/* Tokenizes texts [i0, i1) into c->ids / c->mask ([batch][seq], right
 * padded with pad_token_id). Returns 0, or 1 after printing the error. */
int enc_cli_make_batch(enc_cli *c, size_t i0, size_t i1);

/* Runs io (ids, mask, batch, seq filled from c) and counts its tokens. */
int enc_cli_forward(enc_cli *c, modernbert_io *io);

/* "embed: 3 inputs, 41 tokens in 0.012 s (250.0 inputs/s, 3416.7 tokens/s)" to stderr. */
void enc_cli_report(const enc_cli *c);

/* Writes a JSON string literal (quotes and escapes) to f. */
void enc_cli_json_string(FILE *f, const char *s);

/* `embed --bench BxL,...`: latency of the forward pass at fixed shapes
 * (enc_bench.c). */
int enc_cli_bench(const char *model, const char *shapes, int runs, int threads);

#endif
