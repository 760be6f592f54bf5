/* `nectar bench --compare`: the A/B harness (src/bench/compare.c) from the
 * command line: candidates, workload, power source, protocol, outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/compare.h"
#include "bench/numarg.h"
#include "bench/report.h"
#include "commands.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: nectar bench --compare --a SPEC (--b SPEC | --b-cmd \"SHELL\") [options]\n"
        "candidates (A is the baseline):\n"
        "  --a SPEC, --b SPEC    cmd:SHELL | pipe:SHELL | spin:N | cpu:DIR | mil:BUNDLE[#fn]\n"
        "  --a-cmd/--b-cmd \"SHELL\"     = cmd:SHELL (one process per decision, item on stdin)\n"
        "  --a-pipe/--b-pipe \"SHELL\"   = pipe:SHELL (persistent, one line per decision)\n"
        "  --a-model/--b-model PATH    model file or folder to hash into the record\n"
        "workload (hashed with sha256):\n"
        "  --prompts FILE        one item per non-empty line\n"
        "  --input FILE          the whole file is one item\n"
        "protocol:\n"
        "  --blocks N            blocks per candidate, interleaved A B A B (default 5, min 5)\n"
        "  --per-block N         decisions per block (default 10)\n"
        "  --warmup N            warm-up decisions after the cold one (default 3)\n"
        "  --rate R --deadline-ms D   equal offered load: R requests/s, deadline D ms\n"
        "  --timeout-s T         per-decision timeout (default 60)\n"
        "power:\n"
        "  --power SPEC          auto (default) | none | rapl | rapl:ZONE,... | powermetrics |\n"
        "                        powermetrics-cmd:SHELL\n"
        "  --power-period-ms MS  sampling period (default 50; powermetrics 100)\n"
        "  --idle-ms MS          idle block before each round when power is measured (default "
        "1000)\n"
        "  --powercap-root DIR   powercap folder (default /sys/class/powercap)\n"
        "statistics:\n"
        "  --resamples N --confidence C --seed S   bootstrap (default 2000, 0.95, 1)\n"
        "  --claim N             state whether each ratio supports an N x claim\n"
        "output:\n"
        "  --out DIR             samples.csv blocks.csv power.csv summary.json report.md plot.png\n"
        "                        (default bench-compare)\n"
        "  --no-plot             do not run gnuplot\n"
        "  --json                print summary.json instead of the Markdown report\n");
}

typedef struct cli {
    const char *spec[2], *model[2];
    char spec_buf[2][2048];
    const char *prompts, *input, *power, *powercap_root, *out_dir;
    double timeout_s, period_ms, idle_ms;
    int is_json, want_plot;
    nc_compare_opts o;
} cli;

static int set_spec(cli *c, int who, const char *prefix, const char *v) {
    if (c->spec[who]) return cli_failf("bench --compare: candidate %c given twice", 'A' + who);
    snprintf(c->spec_buf[who], sizeof c->spec_buf[who], "%s%s", prefix, v);
    c->spec[who] = c->spec_buf[who];
    return 0;
}

static int parse(cli *c, int argc, char **argv) {
    nc_error err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--compare")) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--json")) {
            c->is_json = 1;
            continue;
        }
        if (!strcmp(a, "--no-plot")) {
            c->want_plot = 0;
            continue;
        }
        if (i + 1 >= argc) {
            usage(stderr);
            return cli_failf("bench --compare: option %s needs a value", a);
        }
        const char *v = argv[++i];
        nc_status st = NC_OK;
        int64_t n;
        int rc = 0;
        if (!strcmp(a, "--a"))
            rc = set_spec(c, 0, "", v);
        else if (!strcmp(a, "--b"))
            rc = set_spec(c, 1, "", v);
        else if (!strcmp(a, "--a-cmd"))
            rc = set_spec(c, 0, "cmd:", v);
        else if (!strcmp(a, "--b-cmd"))
            rc = set_spec(c, 1, "cmd:", v);
        else if (!strcmp(a, "--a-pipe"))
            rc = set_spec(c, 0, "pipe:", v);
        else if (!strcmp(a, "--b-pipe"))
            rc = set_spec(c, 1, "pipe:", v);
        else if (!strcmp(a, "--a-model"))
            c->model[0] = v;
        else if (!strcmp(a, "--b-model"))
            c->model[1] = v;
        else if (!strcmp(a, "--prompts"))
            c->prompts = v;
        else if (!strcmp(a, "--input"))
            c->input = v;
        else if (!strcmp(a, "--power"))
            c->power = v;
        else if (!strcmp(a, "--powercap-root"))
            c->powercap_root = v;
        else if (!strcmp(a, "--out"))
            c->out_dir = v;
        else if (!strcmp(a, "--blocks")) {
            st = nc_parse_int64(v, "--blocks", 5, 100000, &n, &err);
            c->o.n_blocks = (int)n;
        } else if (!strcmp(a, "--per-block")) {
            st = nc_parse_int64(v, "--per-block", 1, 10000000, &n, &err);
            c->o.per_block = (int)n;
        } else if (!strcmp(a, "--warmup")) {
            st = nc_parse_int64(v, "--warmup", 0, 10000000, &n, &err);
            c->o.n_warmup = (int)n;
        } else if (!strcmp(a, "--resamples")) {
            st = nc_parse_int64(v, "--resamples", 100, 10000000, &n, &err);
            c->o.n_resamples = (int)n;
        } else if (!strcmp(a, "--seed")) {
            st = nc_parse_int64(v, "--seed", 0, INT64_MAX, &n, &err);
            c->o.seed = (uint64_t)n;
        } else if (!strcmp(a, "--confidence")) {
            st = nc_parse_double(v, "--confidence", 0, &c->o.confidence, &err);
            if (st == NC_OK && !(c->o.confidence > 0.5 && c->o.confidence < 1))
                return cli_failf("--confidence %s: must be in (0.5, 1)", v);
        } else if (!strcmp(a, "--claim")) {
            st = nc_parse_double(v, "--claim", 0, &c->o.claim, &err);
            if (st == NC_OK && !(c->o.claim > 0))
                return cli_failf("--claim %s: must be positive", v);
        } else if (!strcmp(a, "--rate")) {
            st = nc_parse_double(v, "--rate", 0, &c->o.rate_hz, &err);
            if (st == NC_OK && !(c->o.rate_hz > 0))
                return cli_failf("--rate %s: must be positive", v);
        } else if (!strcmp(a, "--deadline-ms")) {
            double d;
            st = nc_parse_double(v, "--deadline-ms", 0, &d, &err);
            if (st == NC_OK && !(d > 0)) return cli_failf("--deadline-ms %s: must be positive", v);
            c->o.deadline_s = d / 1e3;
        } else if (!strcmp(a, "--timeout-s")) {
            st = nc_parse_double(v, "--timeout-s", 0, &c->timeout_s, &err);
            if (st == NC_OK && !(c->timeout_s > 0))
                return cli_failf("--timeout-s %s: must be positive", v);
        } else if (!strcmp(a, "--power-period-ms")) {
            st = nc_parse_double(v, "--power-period-ms", 0, &c->period_ms, &err);
            if (st == NC_OK && !(c->period_ms >= 1))
                return cli_failf("--power-period-ms %s: must be >= 1", v);
        } else if (!strcmp(a, "--idle-ms")) {
            st = nc_parse_double(v, "--idle-ms", 0, &c->idle_ms, &err);
            if (st == NC_OK && !(c->idle_ms >= 0))
                return cli_failf("--idle-ms %s: must be >= 0", v);
        } else {
            usage(stderr);
            return cli_failf("bench --compare: unknown option %s", a);
        }
        if (rc) return rc;
        if (st != NC_OK) return cli_fail(&err);
    }
    if (!c->spec[0] || !c->spec[1]) {
        usage(stderr);
        return cli_failf("bench --compare: both --a and --b (or --b-cmd) are required");
    }
    if (c->prompts && c->input)
        return cli_failf("bench --compare: give --prompts or --input, not both");
    if ((c->o.rate_hz > 0) != (c->o.deadline_s > 0))
        return cli_failf("bench --compare: --rate and --deadline-ms go together");
    return 0;
}

int cmd_bench_compare(int argc, char **argv) {
    cli c;
    memset(&c, 0, sizeof c);
    nc_compare_opts_default(&c.o);
    c.power = "auto";
    c.out_dir = "bench-compare";
    c.timeout_s = 60;
    c.period_ms = 0; /* per source, below */
    c.idle_ms = 1000;
    c.want_plot = 1;
    int rc = parse(&c, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    c.o.idle_s = c.idle_ms / 1e3;

    nc_error err = {0};
    nc_bench_workload w;
    const char *wkind = c.prompts ? "prompts" : "input";
    if (nc_workload_load(wkind, c.prompts ? c.prompts : c.input, &w, &err) != NC_OK)
        return cli_fail(&err);
    nc_candidate *cand[2] = {NULL, NULL};
    nc_power_sampler *power = NULL;
    nc_compare_result r;
    memset(&r, 0, sizeof r);
    int exit_code = 1;
    for (int k = 0; k < 2; k++) {
        if (nc_candidate_open(c.spec[k], c.timeout_s, &cand[k], &err) != NC_OK) goto fail;
        if (c.model[k] && nc_candidate_set_model(cand[k], c.model[k], &err) != NC_OK) goto fail;
    }
    /* RAPL reads are cheap; powermetrics is itself a process drawing power in
     * the domain it measures, so it samples less often by default */
    if (c.period_ms <= 0) c.period_ms = !strncmp(c.power, "powermetrics", 12) ? 100 : 50;
    if (nc_power_open(c.power, c.powercap_root, c.period_ms / 1e3, &power, &err) != NC_OK)
        goto fail;
    fprintf(stderr, "nectar: comparing A = %s and B = %s; power: %s\n", c.spec[0], c.spec[1],
            power->domain);
    if (nc_compare_run(cand[0], cand[1], &w, power, &c.o, &r, &err) != NC_OK) goto fail;
    nc_report_input in = {&r, &c.o, {cand[0], cand[1]}, &w};
    char note[256];
    if (nc_report_write(&in, c.out_dir, c.want_plot, note, sizeof note, &err) != NC_OK) goto fail;
    if (c.is_json) {
        json_t *j;
        if (nc_report_summary_json(&in, &j, &err) != NC_OK) goto fail;
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        json_decref(j);
        if (s) puts(s);
        free(s);
    } else {
        char *md;
        if (nc_report_markdown(&in, &md, &err) != NC_OK) goto fail;
        fputs(md, stdout);
        free(md);
    }
    fprintf(stderr,
            "nectar: wrote %s/{samples.csv,blocks.csv,power.csv,summary.json,report.md}; %s\n",
            c.out_dir, note);
    exit_code = 0;
fail:
    if (exit_code) cli_fail(&err);
    nc_compare_result_free(&r);
    nc_power_close(power);
    nc_candidate_close(cand[0]);
    nc_candidate_close(cand[1]);
    nc_workload_free(&w);
    return exit_code;
}
