/* `nectar ane probe`: runs the probe ladder (src/ane_host/ane_probe.h) on
 * the Neural Engine (macOS) or the fake device, prints a table and writes
 * the results as JSON with the chip, the OS and nectar's version. The JSON
 * is also the probe profile that `nectar mil check --ane-profile` and the
 * ANE device read (docs/ane-first-run.md); by default it is saved to
 * <per-user cache>/nectar-ane/profile.json. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include "ane_host/ane_bundle_probe.h"
#include "ane_host/ane_fake.h"
#include "ane_host/ane_ladder.h"
#include "ane_host/ane_probe.h"
#include "ane_host/ane_stage.h"
#include "base/json.h"
#include "base/mmap.h"
#include "cli_opts.h"
#include "cmd_ane.h"
#include "commands.h"
#if defined(__APPLE__)
#include "ane/ane_apple.h"
#endif

static void usage(FILE *f) {
    fprintf(f, "usage: nectar ane doctor [-o FILE] ...   (the first run in one command: --help)\n"
               "       nectar ane probe [--device real|fake[:SETTING...]] [--json FILE] ...   (--help)\n"
               "  probe: asks the Neural Engine (or the fake device) what it accepts.\n"
               "The fake device of run/chat/serve/bench (--backend ane):\n");
    ane_fake_behaviour_help(f);
}

/* The machine, in words: the chip and the OS. A platform seam: sysctl on
 * macOS, /proc/cpuinfo and uname elsewhere. */
void ane_machine(char *chip, size_t cc, char *os, size_t oc) {
    snprintf(chip, cc, "unknown");
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(os, oc, "%s %s %s", u.sysname, u.release, u.machine);
    else
        snprintf(os, oc, "unknown");
#if defined(__APPLE__)
    size_t n = cc;
    if (sysctlbyname("machdep.cpu.brand_string", chip, &n, NULL, 0) != 0) snprintf(chip, cc, "?");
    char ver[64];
    n = sizeof ver;
    if (sysctlbyname("kern.osproductversion", ver, &n, NULL, 0) == 0)
        snprintf(os, oc, "macOS %s (%s %s)", ver, u.release, u.machine);
#else
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) snprintf(chip, cc, "%s", p + 2);
            chip[strcspn(chip, "\n")] = '\0';
            break;
        }
    if (f) fclose(f);
#endif
}

json_t *ane_probe_json(const ane_probe_result *r, int n, const char *device) {
    char chip[256], os[256], when[32];
    ane_machine(chip, sizeof chip, os, sizeof os);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *cases = json_array();
    for (int i = 0; i < n; i++) {
        const ane_probe_result *x = &r[i];
        json_array_append_new(
            cases, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f}",
                             "id", x->id, "question", x->question, "checker", x->checker, "mode",
                             x->mode, "surfaces", x->surfaces, "status", x->status, "error",
                             x->error, "max_err", x->max_err, "ref_max", x->ref_max, "load_ms",
                             x->load_ms, "eval_us", x->eval_us, "tops", x->tops, "gbps", x->gbps));
    }
    return json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:o}", "nectar_version", NECTAR_VERSION,
                     "profile_version", 1, "device", device, "chip", chip, "os", os, "date", when,
                     "cases", cases);
}

int ane_write_json(json_t *root, const char *path) {
    char *text = json_dumps(root, JSON_INDENT(1));
    nc_error err = {0};
    nc_status st = text ? nc_write_file_atomic(path, text, strlen(text), &err)
                        : nc_fail(&err, NC_ERR_NOMEM, "out of memory");
    free(text);
    return st ? cli_fail(&err) : 0;
}

/* The compile ladder's record and order and the lowering forms' outcomes
 * in the profile being replaced (ane_ladder.h, forms_profile.h) stay: a
 * new probe answers other questions. */
void ane_keep_ladder(json_t *doc, const char *prof) {
    json_t *old = NULL;
    nc_error err = {0};
    if (!nc_file_exists(prof) || nc_json_load_file(prof, &old, &err)) return;
    const char *keys[] = {"ladder", "ladder_order", "forms"};
    for (int i = 0; i < 3; i++) {
        json_t *v = json_object_get(old, keys[i]);
        if (v) json_object_set(doc, keys[i], v);
    }
    json_decref(old);
}

/* The probe's device: "real" (macOS), or the fake one -- permissive (the
 * probe asks the questions; the fake answers what the interpreter can),
 * told what to refuse after "fake:". */
static nc_status open_device(const char *device, ane_device *dev, nc_error *err) {
    if (!strncmp(device, "fake", 4) && (!device[4] || device[4] == ':')) {
        ane_fake_options o = {{0, 0}, ANE_MAX_IN_FLIGHT, 0, {0}};
        NC_TRY(ane_fake_behaviour_parse(device[4] ? device + 5 : "", &o.behave, err));
        return ane_fake_new_with(&o, dev, err);
    }
    if (strcmp(device, "real"))
        return nc_fail(err, NC_ERR_INVALID, "--device %s: give real, fake or fake:SETTING[:...]",
                       device);
#if defined(__APPLE__)
    ane_surface_policy none = {0, 0};
    ane_apple_options o = {0};
    o.surfaces = &none; /* each case allocates as its question says */
    return ane_apple_open(&o, dev, err);
#else
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "--device real: the Neural Engine bridge is built only on macOS; "
                   "use --device fake");
#endif
}

static void close_device(const char *device, ane_device *dev) {
    if (!strncmp(device, "fake", 4)) {
        ane_fake_free(dev);
        return;
    }
#if defined(__APPLE__)
    ane_apple_close(dev);
#endif
}

nc_status ane_run_probe(const char *device, const char *work, int small, int repeats,
                        ane_probe_result **res, int *n, nc_error *err) {
    ane_device dev;
    NC_TRY(open_device(device, &dev, err));
    int fake = !strncmp(device, "fake", 4);
    ane_probe_options po = {work, fake, small >= 0 ? small : fake, repeats};
    nc_status st = ane_probe_run(&dev, &po, res, n, err);
    close_device(device, &dev);
    return st;
}

/* --bundle's outcome per lowering form into the probe profile (unless
 * save is 0; the fake device's only with NECTAR_ANE_PROFILE), and the
 * compile options the profile then suggests for this device, into
 * options ("" when none). */
static nc_status record_forms(const char *device, const char *bundle,
                              const ane_bundle_probe_prog *p, int n, int save, char *options,
                              size_t cap, nc_error *err) {
    options[0] = '\0';
    lower_forms_tally t;
    int has = 0;
    NC_TRY(ane_bundle_probe_forms(bundle, p, n, &t, &has, err));
    if (!has) return NC_OK;
    char prof[1024] = "";
    if (save) NC_TRY(ane_ladder_profile_path(!strncmp(device, "fake", 4), prof, sizeof prof, err));
    ane_ladder l;
    NC_TRY(ane_ladder_open(&l, prof, device, err));
    if (!l.recorded) l.recorded = json_object(); /* the suggestion, also without a file */
    lower_forms_tally_put(l.recorded, device, &t);
    lower_all_forms next;
    char why[1024];
    if (ane_ladder_recommend(&l, &t.of, &next, why, sizeof why, options, cap))
        printf("the probe profile%s%s suggests: %s\n", prof[0] ? " " : "", prof, why);
    nc_status st = ane_ladder_record(&l, NULL, 0, err);
    if (!st && prof[0]) printf("lowering forms recorded in the probe profile %s\n", prof);
    ane_ladder_close(&l);
    return st;
}

/* --bundle: the bundle's own programs whole, per bucket, per function. */
static int probe_bundle(const char *device, const char *bundle, const char *work,
                        const char *json_path, int save) {
    nc_error err = {0};
    ane_device dev;
    if (open_device(device, &dev, &err)) return cli_fail(&err);
    ane_bundle_probe_prog *p = NULL;
    int n = 0, opens = 0;
    nc_status st = ane_bundle_probe(&dev, bundle, work, &p, &n, &opens, &err);
    close_device(device, &dev);
    if (st) return cli_fail(&err);
    printf("%s on the %s device%s\n", bundle, device,
           strncmp(device, "fake", 4) ? "" : " (the MIL interpreter: nothing here runs on an ANE)");
    ane_bundle_probe_print(p, n, stdout);
    printf("%d programs compiled or loaded%s\nrecommended forms:\n", opens,
           opens > ANE_REPORTED_COMPILE_BUDGET
               ? " (above the ~119 per process public projects report: on a device, later "
                 "ones may fail for that reason alone)"
               : "");
    ane_bundle_probe_recommend(p, n, stdout);
    char options[512];
    if (record_forms(device, bundle, p, n, save, options, sizeof options, &err)) {
        free(p);
        return cli_fail(&err);
    }
    int rc = 0;
    if (json_path) {
        json_t *progs = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(
                progs, json_pack("{s:s, s:b, s:s, s:i, s:i, s:s, s:i, s:i, s:s, s:s}", "path",
                                 p[i].path, "whole_ok", p[i].whole_ok, "whole_error",
                                 p[i].whole_error, "buckets", p[i].n_buckets, "buckets_ok",
                                 p[i].buckets_ok, "bucket_error", p[i].bucket_error, "functions",
                                 p[i].n_fns, "functions_ok", p[i].fns_ok, "function_error",
                                 p[i].fn_error, "refused_kernels", p[i].refused_kernels));
        char *rec = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&rec, &len);
        if (mf) {
            ane_bundle_probe_recommend(p, n, mf);
            fclose(mf);
        }
        json_t *doc = json_pack("{s:s, s:s, s:s, s:i, s:o, s:s, s:s}", "nectar_version",
                                NECTAR_VERSION, "bundle", bundle, "device", device, "compiles",
                                opens, "programs", progs, "recommendations", rec ? rec : "",
                                "suggested_options", options);
        free(rec);
        rc = doc ? ane_write_json(doc, json_path) : cli_failf("out of memory");
        json_decref(doc);
    }
    free(p);
    return rc;
}

static int probe(int argc, char **argv) {
#if defined(__APPLE__)
    const char *device = "real";
#else
    const char *device = "fake";
#endif
    const char *json_path = NULL, *work = NULL, *bundle = NULL;
    int no_save = 0, small = 0, full = 0, repeats = 0;
    const cli_opt opts[] = {
        CLI_OPT(NULL, "--device", CLI_STRING, "real|fake[:SETTING...]",
                "the device (default: real on macOS, else fake; fake:SETTING[:...]\n"
                "sets the fake device's behaviour, below)",
                &device),
        CLI_OPT(NULL, "--json", CLI_STRING, "FILE", "write the results to FILE", &json_path),
        CLI_OPT(NULL, "--no-save", CLI_FLAG, NULL,
                "do not save the results as the probe profile\n"
                "(<per-user cache>/nectar-ane/profile.json)",
                &no_save),
        CLI_OPT(NULL, "--work", CLI_STRING, "DIR",
                "the folder of the probe's programs (default: under the per-user cache)", &work),
        CLI_OPT(NULL, "--repeats", CLI_INT, "N", "timed evaluations per case (default 5)", &repeats,
                .min = 1, .max = 10000),
        CLI_OPT(NULL, "--small", CLI_FLAG, NULL,
                "speed probes at interpreter sizes (the default on the fake device)", &small),
        CLI_OPT(NULL, "--full", CLI_FLAG, NULL,
                "speed probes at full size (the default on a real one)", &full),
        CLI_OPT(NULL, "--bundle", CLI_STRING, "DIR",
                "compile the bundle's own programs whole, per sequence bucket and per\n"
                "function, and recommend a form for each disputed construct (the program\n"
                "split; for a kernel refused even alone, the options of its construct);\n"
                "what each lowering form met goes into the probe profile (the fake\n"
                "device's only in $NECTAR_ANE_PROFILE), and the compile options it then\n"
                "suggests are printed (nectar compile --ane-profile takes them)",
                &bundle),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "ane probe",
        .usage = "[--device real|fake[:SETTING...]] [--json FILE] [--no-save] [--work DIR] [--repeats N]\n"
                 "                        [--small|--full] [--bundle DIR]",
        .about = "Runs a ladder of small programs on the Neural Engine (real, macOS) or the fake\n"
                 "device (the MIL interpreter) and reports, per case, whether it compiled, loaded\n"
                 "and evaluated, the framework's error text, the error against the interpreter\n"
                 "and the time. Unless --no-save the results are also saved as the probe profile\n"
                 "that `nectar mil check --ane-profile` and the ANE device read. With --bundle,\n"
                 "what each lowering form met is recorded in the profile (the fake device's only\n"
                 "in $NECTAR_ANE_PROFILE), and the compile options it then suggests are printed:\n"
                 "`nectar compile --ane-profile` takes them.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc == 0) { /* after the help: the settings --device fake: takes */
        printf("\nThe fake device's settings (also run/chat/serve/bench --ane-device):\n");
        ane_fake_behaviour_help(stdout);
    }
    if (rc != CLI_GO) return rc;
    if (small && full) return cli_usage_error(&cmd, "--small and --full exclude each other");
    int save = !no_save, size = small ? 1 : full ? 0 : -1;
    if (strncmp(device, "fake", 4) && strcmp(device, "real"))
        return cli_failf("--device %s: give real, fake or fake:SETTING[:...]", device);
    nc_error err = {0};
    char root[1024], tmpwork[1100];
    if (ane_stage_default_root(root, sizeof root, &err)) return cli_fail(&err);
    if (!work) {
        snprintf(tmpwork, sizeof tmpwork, "%s/%s", root, bundle ? "probe-bundle" : "probe");
        work = tmpwork;
    }
    if (bundle) return probe_bundle(device, bundle, work, json_path, save);
    ane_probe_result *res = NULL;
    int n = 0;
    if (ane_run_probe(device, work, size, repeats, &res, &n, &err)) return cli_fail(&err);
    ane_probe_print(res, n, stdout);
    json_t *doc = ane_probe_json(res, n, device);
    free(res);
    rc = doc ? 0 : cli_failf("out of memory");
    if (!rc && json_path) rc = ane_write_json(doc, json_path);
    char prof[1200];
    snprintf(prof, sizeof prof, "%s/profile.json", root);
    if (!rc && save) {
        ane_keep_ladder(doc, prof);
        rc = ane_make_dirs(root, &err) ? cli_fail(&err) : ane_write_json(doc, prof);
        if (!rc) printf("probe profile saved to %s\n", prof);
    }
    json_decref(doc);
    return rc;
}

int cmd_ane(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "probe")) return probe(argc - 1, argv + 1);
    if (!strcmp(argv[1], "doctor")) return cmd_ane_doctor(argc - 1, argv + 1);
    usage(stderr);
    return 2;
}
