/* `nectar ane doctor`: the first run on a new machine as one command. It
 * runs the probe (cmd_ane.c), compiles a model (models/demo) to a bundle,
 * runs the bundle on the ane backend -- through the compile ladder, with
 * the CPU fallback -- against the cpu backend on the same greedy prompt,
 * and writes everything into one JSON file (atomically) for the user to
 * send back: docs/ane-first-run.md. Off macOS the device is the fake one
 * (the MIL interpreter), and the output says so. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ane_host/ane_ladder.h"
#include "ane_host/ane_stage.h"
#include "bundle/bundle_io.h"
#include "base/mmap.h"
#include "cli_forms.h"
#include "cli_opts.h"
#include "lower/qwen3_compile.h"
#include "cmd_ane.h"
#include "commands.h"
#include "nectar.h"

#define DOCTOR_PROMPT "In the beginning"

typedef struct text_buf {
    char *p;
    size_t n, cap;
} text_buf;

static int collect(void *user, int32_t token, const char *text, size_t len) {
    (void)token;
    text_buf *b = user;
    if (b->n + len + 1 > b->cap) {
        size_t cap = (b->n + len + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q) return 1;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, text, len);
    b->n += len;
    b->p[b->n] = '\0';
    return 0;
}

/* Greedy text of `tokens` tokens from model `path` on `backend`; the
 * placement line into *where (malloc'd). */
static nc_status generate(const char *path, const char *backend, const char *const *opts,
                          int tokens, char **text, char **where, nc_error *err) {
    nc_model *m;
    NC_TRY(nc_model_open(path, backend, opts, &m, err));
    *where = strdup(nc_model_placement(m));
    nc_sequence *s = NULL;
    text_buf b = {0};
    nc_status st = nc_sequence_new(m, 0, &s, err);
    if (!st) st = nc_generate(s, DOCTOR_PROMPT, tokens, NULL, collect, &b, NULL, err);
    if (s) nc_sequence_free(s);
    nc_model_free(m);
    *text = b.p ? b.p : strdup("");
    return st;
}

/* model compiled into bundle: with the default forms, or, where the probe
 * profile records forms this device refused, with the ones it suggests
 * (cli_forms.h; recorded in run as "forms"), so a second doctor run
 * starts from what the first one learnt. */
static nc_status compile_model(const char *model, const char *bundle, const char *device,
                               int fake, int threads, const char *const *copts, json_t *run,
                               nc_error *err) {
    char prof[1300];
    lower_all_forms a = {{0}, 0, {0}};
    int changed = 0;
    if (!ane_ladder_profile_path(fake, prof, sizeof prof, err) && prof[0] && nc_file_exists(prof)) {
        NC_TRY(lower_forms_model_of_dir(model, 0, &a.model, err));
        NC_TRY(cli_forms_from_profile(prof, device, NULL, &a, &changed, err));
    }
    if (!changed) return nc_compile(model, bundle, copts, err);
    char opts[512] = "";
    for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
        char v[32];
        size_t n = strlen(opts);
        lower_form_value(&a, (lower_form_key)k, v, sizeof v);
        snprintf(opts + n, sizeof opts - n, "%s%s %s", n ? " " : "",
                 lower_form_option((lower_form_key)k), v);
    }
    json_object_set_new(run, "forms", json_string(opts));
    lower_compile_options o;
    memset(&o, 0, sizeof o);
    o.model_dir = model;
    o.out_dir = bundle;
    o.n_threads = threads;
    o.forms = a.forms;
    o.kernels_per_layer = a.kernels_per_layer;
    lower_compile_report r;
    return lower_qwen3_compile(&o, &r, err);
}

int cmd_ane_doctor(int argc, char **argv) {
#if defined(__APPLE__)
    const char *device = "real";
#else
    const char *device = "fake";
#endif
    const char *out = "nectar-ane-doctor.json", *model = "models/demo", *ane_device = NULL;
    int tokens = 64, threads = 0;
    const cli_opt opts[] = {
        CLI_OPT("-o", "--out", CLI_STRING, "FILE",
                "the file to send back (default nectar-ane-doctor.json)", &out),
        CLI_OPT("-m", "--model", CLI_STRING, "MODEL", "the model to compile (default models/demo)",
                &model),
        CLI_OPT("-n", NULL, CLI_INT, "TOKENS", "greedy tokens on each backend (default 64)",
                &tokens, .min = 1, .max = 4096),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "threads (default: all cores)", &threads,
                .min = 1, .max = 1024),
        CLI_OPT(NULL, "--device", CLI_STRING, "fake|real",
                "the probe's device (default: real on macOS, else fake)", &device),
        CLI_OPT(NULL, "--ane-device", CLI_STRING, "SETTING",
                "the model's device as run takes it (e.g. fake:reject=all)", &ane_device),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "ane doctor",
        .usage = "[-o FILE] [-m MODEL] [-n TOKENS] [-t N] [--device fake|real] [--ane-device S]",
        .about = "The first run on a machine, in one command: runs the probe (`nectar ane\n"
                 "probe`), compiles MODEL into a bundle, runs it on the ane backend through the\n"
                 "compile ladder and on the cpu backend (greedy, prompt \"" DOCTOR_PROMPT "\"),\n"
                 "and writes the probe's cases, both texts, where each kernel ran and the\n"
                 "ladder's record into FILE: the file to send back.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if (strcmp(device, "fake") && strcmp(device, "real"))
        return cli_failf("--device %s: give fake or real", device);
    if (!ane_device) ane_device = device;
    int fake = !!strncmp(ane_device, "real", 4);
    printf("nectar ane doctor: device %s%s\n", ane_device,
           fake ? " -- the fake device (the MIL interpreter): nothing here runs on an ANE" : "");

    nc_error err = {0};
    char root[1024], work[1200], bundle[1300];
    if (ane_stage_default_root(root, sizeof root, &err) || ane_make_dirs(root, &err))
        return cli_fail(&err);
    snprintf(work, sizeof work, "%s/doctor-XXXXXX", root);
    if (!mkdtemp(work)) return cli_failf("%s: cannot create a work folder", work);
    snprintf(bundle, sizeof bundle, "%s/demo.ane", work);

    /* 1. the probe */
    char pwork[1300];
    snprintf(pwork, sizeof pwork, "%s/probe", work);
    ane_probe_result *res = NULL;
    int n = 0;
    json_t *probe = NULL;
    if (ane_run_probe(device, pwork, -1, 0, &res, &n, &err) == NC_OK) {
        int ok = 0;
        for (int i = 0; i < n; i++)
            ok += !strcmp(res[i].status, "ok");
        printf("probe: %d cases, %d ok\n", n, ok);
        probe = ane_probe_json(res, n, device);
    } else {
        printf("probe: failed: %s\n", err.msg);
        probe = json_pack("{s:s}", "error", err.msg);
    }
    free(res);

    /* 2. the model compiled, then run on both backends */
    char th[32], dev[200];
    snprintf(th, sizeof th, "threads=%d", threads);
    snprintf(dev, sizeof dev, "ane_device=%s", ane_device);
    const char *copts[] = {threads ? th : NULL, NULL};
    const char *aopts[] = {dev, threads ? th : NULL, NULL};
    json_t *run = json_pack("{s:s, s:s, s:i}", "model", model, "prompt", DOCTOR_PROMPT, "tokens",
                            tokens);
    char *cpu_text = NULL, *cpu_where = NULL, *ane_text = NULL, *ane_where = NULL;
    nc_error e2 = {0};
    nc_status st = compile_model(model, bundle, ane_device, fake, threads, copts, run, &e2);
    if (st) printf("compile: failed: %s\n", e2.msg);
    if (!st) st = generate(model, "cpu", copts, tokens, &cpu_text, &cpu_where, &e2);
    if (!st) st = generate(bundle, "ane", aopts, tokens, &ane_text, &ane_where, &e2);
    if (st) {
        json_object_set_new(run, "error", json_string(e2.msg));
        printf("run: failed: %s\n", e2.msg);
    } else {
        int same = !strcmp(cpu_text, ane_text);
        json_object_set_new(run, "cpu_text", json_string(cpu_text));
        json_object_set_new(run, "ane_text", json_string(ane_text));
        json_object_set_new(run, "same_text", json_boolean(same));
        json_object_set_new(run, "placement", json_string(ane_where));
        printf("placement: %s\n", ane_where);
        printf("%d greedy tokens on the ane backend: %s the cpu backend's text\n", tokens,
               same ? "the same as" : "NOT the same as");
    }
    free(cpu_text);
    free(cpu_where);
    free(ane_text);
    free(ane_where);

    /* 3. the ladder's record, and the file */
    json_t *doc = json_pack("{s:i, s:s, s:s, s:s, s:o, s:o}", "doctor_version", 1, "nectar_version",
                            NECTAR_VERSION, "device", ane_device, "note",
                            fake ? "the fake device (the MIL interpreter): nothing here ran on an "
                                   "ANE"
                                 : "the Neural Engine",
                            "probe", probe ? probe : json_null(), "run", run);
    char prof[1300];
    if (!ane_ladder_profile_path(fake, prof, sizeof prof, &err) && prof[0])
        ane_keep_ladder(doc, prof);
    rc = doc ? ane_write_json(doc, out) : cli_failf("out of memory");
    json_decref(doc);
    if (!rc) printf("wrote %s: send this file back (docs/ane-first-run.md)\n", out);
    /* the work folder: the probe's programs and the bundle */
    lower_remove_tree(work);
    return rc ? rc : st ? 1 : 0;
}
