/* `nectar decide`: a decision model (docs/decision.md) on texts (-p, -f: one
 * per line) or a JSON file of inputs (--json: an array of {"text": ...} or
 * {"ids": [...], "markers": [...], "type_ids": [...]} objects, markers and
 * type ids optional), one JSON line per input: the marker positions, raw
 * marker probabilities, calibrated probabilities and action probabilities. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mmap.h"
#include "cli_opts.h"
#include "commands.h"
#include "decide/decision_batch.h"
#include "decide/decision_bundle.h"

static void print_floats(FILE *out, const char *key, const float *v, int n) {
    fprintf(out, ", \"%s\": [", key);
    for (int i = 0; i < n; i++)
        fprintf(out, "%s%.7g", i ? ", " : "", (double)v[i]);
    fputc(']', out);
}

/* One input through the model, printed as one JSON line. */
static int decide_one(FILE *out, decision_model *m, int index, const int32_t *ids, int seq,
                      const int32_t *markers, const int32_t *types) {
    const decision_config *c = decision_model_config(m);
    int K = c->num_markers, A = c->num_actions;
    int32_t mk[DECISION_MAX_MARKERS];
    float z[DECISION_MAX_MARKERS], p[DECISION_MAX_MARKERS], cal[DECISION_MAX_MARKERS];
    float *act = malloc((size_t)A * sizeof *act);
    nc_error err = {0};
    if (!act) return cli_failf("decide: out of memory");
    nc_status st = markers ? NC_OK : decision_find_markers(c, ids, NULL, seq, mk, &err);
    decision_io io = {.ids = ids, .markers = markers, .types = types, .batch = 1, .seq = seq,
                      .marker_logits = z, .marker_probs = p, .calibrated = cal,
                      .action_probs = act};
    if (st == NC_OK) st = decision_forward(m, &io, &err);
    if (st != NC_OK) {
        free(act);
        return cli_failf("decide: input %d: %s", index, err.msg);
    }
    if (markers) memcpy(mk, markers, (size_t)K * sizeof *mk);
    int best = 0;
    for (int a = 1; a < A; a++)
        if (act[a] > act[best]) best = a;
    fprintf(out, "{\"input\": %d, \"markers\": [", index);
    for (int k = 0; k < K; k++)
        fprintf(out, "%s%d", k ? ", " : "", mk[k]);
    fputc(']', out);
    print_floats(out, "marker_logits", z, K);
    print_floats(out, "marker_probs", p, K);
    print_floats(out, "calibrated", cal, K);
    print_floats(out, "action_probs", act, A);
    if (c->action_labels)
        fprintf(out, ", \"action\": \"%s\"}\n", c->action_labels[best]);
    else
        fprintf(out, ", \"action\": %d}\n", best);
    free(act);
    return 0;
}

static int decide_text(FILE *out, decision_model *m, const tok_tokenizer *tok, int index, const char *text) {
    decision_batch b;
    nc_error err = {0};
    const char *texts[1] = {text};
    int rc = 0;
    if (decision_batch_texts(tok, modernbert_model_config(decision_model_encoder(m)), texts, 1, 0,
                             &b, &err) != NC_OK)
        rc = cli_failf("decide: input %d: %s", index, err.msg);
    else
        rc = decide_one(out, m, index, b.ids, b.seq, NULL, NULL);
    decision_batch_free(&b);
    return rc;
}

/* An int array field of a JSON input into a fresh buffer (*n its length). */
static int int_array(const json_t *o, const char *key, int index, int32_t **out, int *n) {
    const json_t *a = json_object_get(o, key);
    *out = NULL;
    *n = 0;
    if (!a) return 0;
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > 1 << 20)
        return cli_failf("decide: input %d: '%s' must be a non-empty array of integers", index,
                         key);
    *n = (int)json_array_size(a);
    *out = malloc((size_t)*n * sizeof **out);
    if (!*out) return cli_failf("decide: out of memory");
    for (int i = 0; i < *n; i++) {
        const json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
            json_integer_value(v) > INT32_MAX)
            return cli_failf("decide: input %d: %s[%d] must be an integer", index, key, i);
        (*out)[i] = (int32_t)json_integer_value(v);
    }
    return 0;
}

static int decide_json_item(FILE *out, decision_model *m, const tok_tokenizer *tok, int index,
                            const json_t *o) {
    const char *text = json_string_value(json_object_get(o, "text"));
    if (text) return decide_text(out, m, tok, index, text);
    int32_t *ids = NULL, *mk = NULL, *ty = NULL;
    int n = 0, nm = 0, nt = 0, K = decision_model_config(m)->num_markers;
    int rc = !json_is_object(o) ? cli_failf("decide: input %d must be an object", index) : 0;
    if (!rc) rc = int_array(o, "ids", index, &ids, &n);
    if (!rc && !ids) rc = cli_failf("decide: input %d has neither 'text' nor 'ids'", index);
    if (!rc) rc = int_array(o, "markers", index, &mk, &nm);
    if (!rc && mk && nm != K)
        rc = cli_failf("decide: input %d: 'markers' has %d positions; the model has %d markers",
                       index, nm, K);
    if (!rc) rc = int_array(o, "type_ids", index, &ty, &nt);
    if (!rc && ty && nt != n)
        rc = cli_failf("decide: input %d: 'type_ids' has %d entries for %d ids", index, nt, n);
    if (!rc) rc = decide_one(out, m, index, ids, n, mk, ty);
    free(ids);
    free(mk);
    free(ty);
    return rc;
}

static int decide_json(FILE *out, decision_model *m, const tok_tokenizer *tok, const char *path) {
    json_t *root = NULL;
    nc_error err = {0};
    if (nc_json_load_file(path, &root, &err) != NC_OK) return cli_fail(&err);
    int rc = json_is_array(root) && json_array_size(root) > 0
                 ? 0
                 : cli_failf("decide: %s: expected a non-empty array of inputs", path);
    for (size_t i = 0; !rc && i < json_array_size(root); i++)
        rc = decide_json_item(out, m, tok, (int)i + 1, json_array_get(root, i));
    json_decref(root);
    return rc;
}

static int decide_lines(FILE *out, decision_model *m, const tok_tokenizer *tok, const char *path) {
    char *buf = NULL;
    size_t len = 0;
    nc_error err = {0};
    if (nc_read_file(path, &buf, &len, &err) != NC_OK) return cli_fail(&err);
    int rc = 0, index = 0;
    for (size_t i = 0; i < len && !rc;) {
        size_t j = i;
        while (j < len && buf[j] != '\n')
            j++;
        size_t e = j > i && buf[j - 1] == '\r' ? j - 1 : j;
        if (e > i) {
            buf[e] = '\0';
            rc = decide_text(out, m, tok, ++index, buf + i);
        }
        i = j + 1;
    }
    free(buf);
    if (!rc && index == 0) rc = cli_failf("decide: %s: no input lines", path);
    return rc;
}

int cmd_decide(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL, *json = NULL, *backend = "cpu";
    const char *device = "real";
    int threads = 0;
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR",
                "decision-model folder: encoder + decision.json + decision.safetensors\n"
                "(--backend mil: a bundle from nectar compile -m DIR)",
                &model, .required = 1),
        CLI_OPT(NULL, "--backend", CLI_STRING, "NAME",
                "cpu (default); mil: the NE region of the bundle in the MIL\n"
                "interpreter's fp16 mode, the two ends on the CPU; ane: the region on\n"
                "the device --ane-device names",
                &backend),
        CLI_OPT(NULL, "--ane-device", CLI_STRING, "NAME",
                "real (default; macOS only) or fake[:SETTINGS] (the interpreter\n"
                "behind the device interface)",
                &device),
        CLI_OPT("-p", "--prompt", CLI_STRING, "TEXT", "one input", &prompt),
        CLI_OPT("-f", "--file", CLI_STRING, "FILE", "one input per line (empty lines skipped)",
                &file),
        CLI_OPT(NULL, "--json", CLI_STRING, "FILE",
                "a JSON array of {\"text\": ...} or {\"ids\": [...], \"markers\": [...],\n"
                "\"type_ids\": [...]} inputs (markers and type ids optional)",
                &json),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "threads (default: all cores)", &threads,
                .min = 1, .max = 1024),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "decide",
        .usage = "-m DIR (-p TEXT | -f FILE | --json FILE) [options]",
        .about = "Runs a decision model (docs/decision.md) on the CPU: per input one JSON line\n"
                 "with the marker positions, marker logits, raw marker probabilities,\n"
                 "calibrated probabilities (softmax(z / T)) and action probabilities.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if ((prompt != NULL) + (file != NULL) + (json != NULL) != 1)
        return cli_usage_error(&cmd, "give one of -p TEXT, -f FILE or --json FILE");
    nc_error err = {0};
    decision_model *m = NULL;
    tok_tokenizer *tok = NULL;
    nc_status st = decision_open_backend(model, backend, device, NULL, threads, &m, &err);
    if (st != NC_OK || tok_load(model, &tok, &err) != NC_OK) {
        decision_free(m);
        return cli_fail(&err);
    }
    rc = 0;
    /* the lines go out only when every input ran: no partial output */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) rc = cli_failf("decide: out of memory");
    if (!rc)
        rc = prompt ? decide_text(out, m, tok, 1, prompt)
             : file ? decide_lines(out, m, tok, file)
                    : decide_json(out, m, tok, json);
    if (out) fclose(out);
    if (!rc && (fwrite(text, 1, len, stdout) != len || fflush(stdout)))
        rc = cli_failf("decide: writing stdout failed");
    if (!rc) /* which parts ran where, the copies between the engines */
        decision_crossings_print(stderr, "decide", m);
    free(text);
    tok_free(tok);
    decision_free(m);
    return rc;
}
