/* `nectar parity`: the parity gate (src/engine/engine_parity.h) on the
 * command line. Both sides are engines (engine_open): the CPU engine on the
 * original folder is the reference; the candidate is an encoder bundle run
 * by the fp16 interpreter. Exits 1 when the gate fails, so scripts can
 * refuse a conversion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "cli_opts.h"
#include "commands.h"
#include "decide/decision_bundle.h"
#include "decide/decision_lower.h"
#include "decide/decision_parity.h"
#include "engine/engine_parity.h"
#include "io/npy.h"
#include "text/tokenizer.h"

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* ids (and mask) [n][seq] from .npy files. */
static nc_status read_npy_ids(const char *ids_path, const char *mask_path, int32_t **ids,
                              int32_t **mask, int *n, int *seq, nc_error *err) {
    nc_npy a = {0}, m = {0};
    float *fa = NULL, *fm = NULL;
    NC_TRY(nc_npy_read(ids_path, &a, err));
    nc_status st =
        a.ndim == 2 && a.count
            ? NC_OK
            : nc_fail(err, NC_ERR_FORMAT, "%s: token ids must be a 2-D array [N, S]", ids_path);
    if (!st) st = nc_npy_to_f32(&a, &fa, err);
    if (!st && mask_path) st = nc_npy_read(mask_path, &m, err);
    if (!st && mask_path && (m.ndim != 2 || m.shape[0] != a.shape[0] || m.shape[1] != a.shape[1]))
        st = nc_fail(err, NC_ERR_FORMAT, "%s: the mask must have the shape of the ids", mask_path);
    if (!st && mask_path) st = nc_npy_to_f32(&m, &fm, err);
    if (!st) {
        *n = (int)a.shape[0];
        *seq = (int)a.shape[1];
        *ids = malloc(a.count * sizeof **ids);
        *mask = malloc(a.count * sizeof **mask);
        if (!*ids || !*mask) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
        for (size_t i = 0; !st && i < a.count; i++) {
            (*ids)[i] = (int32_t)fa[i];
            (*mask)[i] = fm ? fm[i] != 0 : 1;
        }
    }
    free(fa);
    free(fm);
    nc_npy_free(&a);
    nc_npy_free(&m);
    return st;
}

/* One input per non-empty line, encoded with special tokens, padded. */
static nc_status read_text_ids(const char *path, const char *model_dir, int32_t pad, int32_t **ids,
                               int32_t **mask, int *n, int *seq, nc_error *err) {
    char tp[4200], *text = NULL;
    size_t len = 0;
    snprintf(tp, sizeof tp, "%s/tokenizer.json", model_dir);
    tok_tokenizer *tok = NULL;
    NC_TRY(nc_read_file(path, &text, &len, err));
    nc_status st = tok_load(tp, &tok, err);
    int cap = 0, count = 0, longest = 0;
    int32_t **rows = NULL;
    size_t *lens = NULL;
    for (char *p = text; !st && p < text + len;) {
        char *e = memchr(p, '\n', (size_t)(text + len - p));
        size_t l = e ? (size_t)(e - p) : (size_t)(text + len - p);
        if (l && p[l - 1] == '\r') l--;
        if (l) {
            if (count == cap) {
                cap = cap ? 2 * cap : 16;
                int32_t **r2 = realloc(rows, (size_t)cap * sizeof *rows);
                size_t *l2 = r2 ? realloc(lens, (size_t)cap * sizeof *lens) : NULL;
                if (r2) rows = r2;
                if (l2) lens = l2;
                if (!r2 || !l2) {
                    st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
                    break;
                }
            }
            st = tok_encode_special(tok, p, l, &rows[count], &lens[count], err);
            if (st)
                nc_fail_prefix(err, "%s: line %d", path, count + 1);
            else if ((int)lens[count++] > longest)
                longest = (int)lens[count - 1];
        }
        p += l + (e ? (size_t)(e - p - l) + 1 : 0);
        if (!e) break;
    }
    if (!st && (!count || !longest)) st = nc_fail(err, NC_ERR_INVALID, "%s: no inputs", path);
    if (!st) {
        *ids = malloc((size_t)count * longest * sizeof **ids);
        *mask = malloc((size_t)count * longest * sizeof **mask);
        if (!*ids || !*mask) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
        for (int r = 0; !st && r < count; r++)
            for (int t = 0; t < longest; t++) {
                int real = t < (int)lens[r];
                (*ids)[(size_t)r * longest + t] = real ? rows[r][t] : pad;
                (*mask)[(size_t)r * longest + t] = real;
            }
        *n = count;
        *seq = longest;
    }
    for (int r = 0; r < count; r++)
        free(rows[r]);
    free(rows);
    free(lens);
    free(text);
    tok_free(tok);
    return st;
}

/* A decision folder (decision.json) and a bundle compiled from it: the
 * study's gate on the whole decision (decide/decision_parity.h). */
static int parity_decision(const char *model, const char *bundle, const char *inputs,
                           const char *mask_path, int threads) {
    nc_error err = {0};
    decision_model *ref = NULL, *cand = NULL;
    int32_t *ids = NULL, *mask = NULL;
    int n = 0, seq = 0, rc = 1;
    decision_parity_report rep;
    memset(&rep, 0, sizeof rep);
    nc_status st = decision_load(model, threads, &ref, &err);
    if (!st) st = decision_bundle_open(bundle, threads, NULL, &cand, &err);
    if (!st && ends_with(inputs, ".npy"))
        st = read_npy_ids(inputs, mask_path, &ids, &mask, &n, &seq, &err);
    else if (!st) {
        const modernbert_config *c = modernbert_model_config(decision_model_encoder(ref));
        st = read_text_ids(inputs, model, c->pad_token_id >= 0 ? c->pad_token_id : 0, &ids, &mask,
                           &n, &seq, &err);
    }
    if (!st && (st = decision_parity_run(ref, cand, ids, mask, n, seq, &rep, &err)))
        nc_fail_prefix(&err, "%s", bundle);
    if (st)
        rc = cli_fail(&err);
    else {
        decision_parity_print(&rep, stdout);
        rc = rep.passed ? 0 : 1;
    }
    decision_parity_report_free(&rep);
    free(ids);
    free(mask);
    decision_free(cand);
    decision_free(ref);
    return rc;
}

int cmd_parity(int argc, char **argv) {
    const char *model = NULL, *bundle = NULL, *inputs = NULL, *mask_path = NULL;
    int repeats = 2, threads = 0;
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR",
                "the reference: a Hugging Face ModernBERT folder, or a decision folder\n"
                "(decision.json: the gate on the whole decision, docs/decision.md)",
                &model, .required = 1),
        CLI_OPT(NULL, "--candidate", CLI_STRING, "BUNDLE", "the encoder bundle to judge", &bundle,
                .required = 1),
        CLI_OPT(NULL, "--inputs", CLI_STRING, "FILE",
                "text, one input per line (tokenized with DIR's tokenizer, special tokens\n"
                "added), or token ids as .npy [N, S]",
                &inputs, .required = 1),
        CLI_OPT(NULL, "--mask", CLI_STRING, "FILE.npy",
                "with .npy ids: 1 real, 0 padding [N, S] (default all real)", &mask_path),
        CLI_OPT(NULL, "--repeats", CLI_INT, "N",
                "candidate runs for the determinism check (default 2)", &repeats, .min = 2,
                .max = 1024),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "threads (default: all cores)", &threads, .min = 1,
                .max = 1024),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "parity",
        .usage = "-m DIR --candidate BUNDLE --inputs FILE [options]",
        .about =
            "Compares an encoder bundle (nectar compile, run by the fp16 interpreter through\n"
            "the engine seam) with the CPU engine on a fixture set: argmax agreement (must be\n"
            "100%), max probability drift (must be <= 0.02), finiteness, determinism over\n"
            "repeated runs, per-layer hidden-state errors, and per input the top-1/top-2\n"
            "margin beside the logit error (\"not certified\" when the margin is below twice\n"
            "the error). Exit status 1 when the gate fails.\n",
        .opts = {opts}};
    int prc = cli_parse(&cmd, argc, argv);
    if (prc != CLI_GO) return prc;
    if (decision_is_dir(model)) return parity_decision(model, bundle, inputs, mask_path, threads);
    nc_error err = {0};
    engine *ref = NULL, *cand = NULL;
    const char *ref_kind = NULL, *cand_kind = NULL;
    int32_t *ids = NULL, *mask = NULL;
    int n = 0, seq = 0, rc = 1;
    engine_parity_report rep;
    memset(&rep, 0, sizeof rep);
    engine_options eo = {0};
    eo.n_threads = threads;
    nc_status st = engine_kind_for_encoder("cpu", model, &ref_kind, &err);
    if (!st) st = engine_kind_for_encoder("mil", bundle, &cand_kind, &err);
    if (!st) st = engine_open(ref_kind, model, &eo, &ref, &err);
    if (!st) st = engine_open(cand_kind, bundle, &eo, &cand, &err);
    if (!st && ends_with(inputs, ".npy"))
        st = read_npy_ids(inputs, mask_path, &ids, &mask, &n, &seq, &err);
    else if (!st) {
        const modernbert_config *c = ref->encoder;
        st = read_text_ids(inputs, model, c->pad_token_id >= 0 ? c->pad_token_id : 0, &ids, &mask,
                           &n, &seq, &err);
    }
    if (!st) {
        st = engine_parity_run(ref, cand, ids, mask, n, seq, repeats, &rep, &err);
        if (st) nc_fail_prefix(&err, "%s", bundle);
    }
    if (st)
        rc = cli_fail(&err);
    else {
        engine_parity_print(&rep, stdout);
        rc = rep.passed ? 0 : 1;
    }
    engine_parity_report_free(&rep);
    free(ids);
    free(mask);
    engine_close(cand);
    engine_close(ref);
    return rc;
}
