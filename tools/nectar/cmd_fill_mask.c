/* `nectar fill-mask`: the most likely tokens at each mask token ([MASK] or
 * <mask>) of the input, with their probabilities (softmax of the MLM
 * logits), as HF's fill-mask pipeline ranks them. Needs a
 * ModernBertForMaskedLM folder. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_opts.h"
#include "commands.h"
#include "enc_cli.h"
#include "models/modernbert_rank.h"

static void print_one(const enc_cli *c, size_t input, int mask_no, const int32_t *ids,
                      const float *probs, int k, int json) {
    if (json) {
        fputs("{\"input\": ", stdout);
        fprintf(stdout, "%zu, \"text\": ", input + 1);
        enc_cli_json_string(stdout, c->texts[input]);
        fprintf(stdout, ", \"mask\": %d, \"top\": [", mask_no);
    } else if (mask_no == 0) {
        printf("%s\n", c->texts[input]);
    }
    for (int j = 0; j < k; j++) {
        char *s = NULL;
        nc_error err = {0};
        if (tok_decode(c->tok, &ids[j], 1, 0, &s, NULL, &err) != NC_OK) s = NULL;
        if (json) {
            fprintf(stdout, "%s{\"token\": %d, \"token_str\": ", j ? ", " : "", (int)ids[j]);
            enc_cli_json_string(stdout, s ? s : "");
            fprintf(stdout, ", \"score\": %.6g}", (double)probs[j]);
        } else {
            printf("  mask %d  %d. %-16s %.4f  (id %d)\n", mask_no + 1, j + 1, s ? s : "?",
                   (double)probs[j], (int)ids[j]);
        }
        free(s);
    }
    if (json) fputs("]}\n", stdout);
}

int cmd_fill_mask(int argc, char **argv) {
    enc_cli_opts o = {0};
    int k = 5, json = 0;
    const cli_opt own[] = {CLI_OPT(NULL, "--top-k", CLI_INT, "K", "tokens per mask (default 5)", &k,
                                   .min = 1, .max = 1000),
                           CLI_OPT(NULL, "--format", CLI_CHOICE, "text|json",
                                   "json: one object per input and mask", &json,
                                   .choices = "text|json"),
                           /* --json: the one spelling of every command; --format json stays */
                           CLI_OPT(NULL, "--json", CLI_FLAG, NULL, "JSON output (= --format json)",
                                   &json),
                           CLI_ENDROW};
    cli_opt shared[ENC_CLI_N_ROWS];
    enc_cli_table(&o, shared);
    const cli_command cmd = {
        .name = "fill-mask",
        .usage = "-m DIR (-p TEXT | -f FILE) [--top-k K] [--json]",
        .about = "Top-k tokens and probabilities at every [MASK] (or <mask>) of each input\n"
                 "(a ModernBertForMaskedLM folder), e.g. -p \"Paris is the [MASK] of France.\"\n",
        .opts = {shared, own}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc == CLI_GO) rc = enc_cli_finish(&cmd, &o);
    if (rc != CLI_GO) return rc;
    enc_cli c;
    rc = enc_cli_open(&c, "fill-mask", &o);
    const modernbert_config *cfg = c.cfg;
    if (!rc && cfg->head != MODERNBERT_HEAD_MLM)
        rc = cli_failf("fill-mask: %s is not a ModernBertForMaskedLM model", o.model);
    int32_t mask_id = -1;
    if (!rc) {
        mask_id = tok_find(c.tok, "[MASK]");
        if (mask_id < 0) mask_id = tok_find(c.tok, "<mask>");
        if (mask_id < 0) rc = cli_failf("fill-mask: the tokenizer has no [MASK] or <mask> token");
    }
    int V = cfg ? cfg->vocab_size : 0;
    if (k > V && V > 0) k = V;
    float *p = rc ? NULL : malloc((size_t)V * sizeof *p), top_p[1000];
    int32_t top_id[1000];
    if (!rc && !p) rc = cli_failf("fill-mask: out of memory");
    for (size_t i0 = 0; !rc && i0 < c.n_texts; i0 += (size_t)c.batch) {
        size_t i1 = i0 + (size_t)c.batch < c.n_texts ? i0 + (size_t)c.batch : c.n_texts;
        if ((rc = enc_cli_make_batch(&c, i0, i1))) break;
        int n = (int)(i1 - i0), n_rows = 0;
        int *rows = malloc((size_t)n * (size_t)c.seq * sizeof *rows);
        if (!rows) {
            rc = cli_failf("fill-mask: out of memory");
            break;
        }
        for (int r = 0; r < n * c.seq; r++)
            if (c.mask[r] && c.ids[r] == mask_id) rows[n_rows++] = r;
        for (int b = 0; b < n && !rc; b++) {
            int has = 0;
            for (int j = 0; j < n_rows; j++)
                has |= rows[j] / c.seq == b;
            if (!has) rc = cli_failf("fill-mask: input %zu has no mask token", i0 + (size_t)b + 1);
        }
        float *logits = rc ? NULL : malloc((size_t)n_rows * (size_t)V * sizeof *logits);
        if (!rc && !logits) rc = cli_failf("fill-mask: out of memory");
        modernbert_io io = {.batch = n,
                            .mlm_logits = logits,
                            .mlm_rows = rows,
                            .n_mlm_rows = n_rows,
                            .pooling = -1};
        if (!rc) rc = enc_cli_forward(&c, &io);
        for (int j = 0; j < n_rows && !rc; j++) {
            int b = rows[j] / c.seq, mask_no = 0;
            for (int q = 0; q < j; q++)
                mask_no += rows[q] / c.seq == b;
            modernbert_softmax(logits + (size_t)j * V, V, p);
            modernbert_top_k(p, V, k, top_id, top_p);
            print_one(&c, i0 + (size_t)b, mask_no, top_id, top_p, k, json);
        }
        free(logits);
        free(rows);
    }
    if (!rc) enc_cli_report(&c);
    free(p);
    enc_cli_close(&c);
    return rc;
}
