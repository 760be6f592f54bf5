/* `nectar classify`: labels (config id2label) with probabilities (softmax of
 * the classifier logits) for each input, most likely first. Needs a
 * ModernBertForSequenceClassification folder. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_opts.h"
#include "commands.h"
#include "enc_cli.h"
#include "models/modernbert_rank.h"

#define MAX_SHOWN 256

static void print_one(const enc_cli *c, size_t input, const float *logits, int n, int json) {
    const modernbert_config *cfg = c->cfg;
    /* the 256 most likely, or all when fewer */
    float p[MAX_SHOWN], probs[MAX_SHOWN];
    int32_t order[MAX_SHOWN];
    int m = n < MAX_SHOWN ? n : MAX_SHOWN;
    float *all = n <= MAX_SHOWN ? p : malloc((size_t)n * sizeof *all);
    if (!all) {
        cli_failf("classify: out of memory");
        return;
    }
    modernbert_softmax(logits, n, all);
    modernbert_top_k(all, n, m, order, probs);
    if (all != p) free(all);
    if (json) {
        fprintf(stdout, "{\"input\": %zu, \"text\": ", input + 1);
        enc_cli_json_string(stdout, c->texts[input]);
        fputs(", \"labels\": [", stdout);
    } else {
        printf("%s\n", c->texts[input]);
    }
    for (int j = 0; j < m; j++) {
        int l = order[j];
        if (json) {
            fputs(j ? ", {\"label\": " : "{\"label\": ", stdout);
            enc_cli_json_string(stdout, cfg->id2label[l]);
            fprintf(stdout, ", \"id\": %d, \"score\": %.6g}", l, (double)probs[j]);
        } else {
            printf("  %-20s %.4f\n", cfg->id2label[l], (double)probs[j]);
        }
    }
    if (json) fputs("]}\n", stdout);
}

int cmd_classify(int argc, char **argv) {
    enc_cli_opts o = {0};
    int json = 0;
    const cli_opt own[] = {CLI_OPT(NULL, "--format", CLI_CHOICE, "text|json",
                                   "json: one object per input", &json, .choices = "text|json"),
                           /* --json: the one spelling of every command; --format json stays */
                           CLI_OPT(NULL, "--json", CLI_FLAG, NULL, "JSON output (= --format json)",
                                   &json),
                           CLI_ENDROW};
    cli_opt shared[ENC_CLI_N_ROWS];
    enc_cli_table(&o, shared);
    const cli_command cmd = {.name = "classify",
                             .usage = "-m DIR (-p TEXT | -f FILE) [--json]",
                             .about =
                                 "Labels with probabilities for each input, most likely first (a\n"
                                 "ModernBertForSequenceClassification folder).\n",
                             .opts = {shared, own}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc == CLI_GO) rc = enc_cli_finish(&cmd, &o);
    if (rc != CLI_GO) return rc;
    enc_cli c;
    rc = enc_cli_open(&c, "classify", &o);
    const modernbert_config *cfg = c.cfg;
    if (!rc && cfg->head != MODERNBERT_HEAD_CLASSIFIER)
        rc = cli_failf("classify: %s is not a ModernBertForSequenceClassification model", o.model);
    int L = cfg ? cfg->num_labels : 0;
    float *logits = rc ? NULL : malloc((size_t)c.batch * (size_t)L * sizeof *logits);
    if (!rc && !logits) rc = cli_failf("classify: out of memory");
    for (size_t i0 = 0; !rc && i0 < c.n_texts; i0 += (size_t)c.batch) {
        size_t i1 = i0 + (size_t)c.batch < c.n_texts ? i0 + (size_t)c.batch : c.n_texts;
        if ((rc = enc_cli_make_batch(&c, i0, i1))) break;
        modernbert_io io = {.batch = (int)(i1 - i0), .cls_logits = logits, .pooling = -1};
        if ((rc = enc_cli_forward(&c, &io))) break;
        for (size_t i = i0; i < i1; i++)
            print_one(&c, i, logits + (i - i0) * (size_t)L, L, json);
    }
    if (!rc) enc_cli_report(&c);
    free(logits);
    enc_cli_close(&c);
    return rc;
}
