/* `nectar bench --compare`: the A/B harness (src/bench/compare.c) from the
 * command line: candidates, workload, power source, protocol, outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "bench/compare.h"
#include "bench/report.h"
#include "bench/study_table.h"
#include "cli_opts.h"
#include "cli_outdir.h"
#include "commands.h"

typedef struct cli {
    const char *spec[3], *model[2];
    char spec_buf[2][2048];
    int snake_games; /* --snake N: the Snake workload; 0: a file's */
    const char *prompts, *input, *power, *powercap_root, *out_dir;
    double timeout_s, period_ms, idle_ms;
    int is_json, no_plot;
    nc_compare_opts o;
} cli;

/* A candidate is given as --a SPEC, --a-cmd SHELL or --a-pipe SHELL (one). */
static int pick_spec(const cli_command *cmd, cli *c, int who, const char *const given[3]) {
    static const char *const prefix[3] = {"", "cmd:", "pipe:"};
    for (int k = 0; k < 3; k++) {
        if (!given[k]) continue;
        if (c->spec[who]) return cli_usage_error(cmd, "candidate %c given twice", 'A' + who);
        snprintf(c->spec_buf[who], sizeof c->spec_buf[who], "%s%s", prefix[k], given[k]);
        c->spec[who] = c->spec_buf[who];
    }
    return 0;
}

/* CLI_GO, or the exit code after --help or a usage error. */
static int parse(cli *c, int argc, char **argv) {
    const char *given[2][3] = {{NULL}};
    int compare = 0;
    int64_t seed = (int64_t)c->o.seed;
    double deadline_ms = 0;
    const cli_opt candidates[] = {
        CLI_OPT(NULL, "--compare", CLI_FLAG, NULL, "this harness (the option that chose it)",
                &compare),
        CLI_OPT(NULL, "--a", CLI_STRING, "SPEC",
                "baseline: cmd:SHELL | pipe:SHELL | spin:N | cpu:DIR | mil:BUNDLE[#fn] |\n"
                "decide:cpu|mil|ane|ane-fake:PATH",
                &given[0][0]),
        CLI_OPT(NULL, "--b", CLI_STRING, "SPEC", "the candidate compared with A (same forms)",
                &given[1][0]),
        CLI_OPT(NULL, "--a-cmd", CLI_STRING, "SHELL",
                "= --a cmd:SHELL (one process per decision, item on stdin)", &given[0][1]),
        CLI_OPT(NULL, "--b-cmd", CLI_STRING, "SHELL", "= --b cmd:SHELL", &given[1][1]),
        CLI_OPT(NULL, "--a-pipe", CLI_STRING, "SHELL",
                "= --a pipe:SHELL (persistent, one line per decision)", &given[0][2]),
        CLI_OPT(NULL, "--b-pipe", CLI_STRING, "SHELL", "= --b pipe:SHELL", &given[1][2]),
        CLI_OPT(NULL, "--a-model", CLI_STRING, "PATH",
                "model file or folder to hash into the record", &c->model[0]),
        CLI_OPT(NULL, "--b-model", CLI_STRING, "PATH", "the same for B", &c->model[1]),
        CLI_OPT(NULL, "--c", CLI_STRING, "SPEC",
                "a third candidate, compared with A in a second run (A C A C ...);\n"
                "the study's table then has a column each",
                &c->spec[2]),
        CLI_ENDROW};
    const cli_opt workload[] = {
        CLI_OPT(NULL, "--prompts", CLI_STRING, "FILE",
                "workload: one item per non-empty line (hashed with sha256)", &c->prompts),
        CLI_OPT(NULL, "--input", CLI_STRING, "FILE", "workload: the whole file is one item",
                &c->input),
        CLI_OPT(NULL, "--snake", CLI_INT, "N",
                "workload: the ticks of N seeded Snake games played by the teacher,\n"
                "three texts a tick (for decide:BACKEND:PATH candidates)",
                &c->snake_games, .min = 1, .max = 100000),
        CLI_OPT(NULL, "--blocks", CLI_INT, "N",
                "blocks per candidate, interleaved A B A B (default 5)", &c->o.n_blocks, .min = 5,
                .max = 100000),
        CLI_OPT(NULL, "--per-block", CLI_INT, "N", "decisions per block (default 10)",
                &c->o.per_block, .min = 1, .max = 10000000),
        CLI_OPT(NULL, "--warmup", CLI_INT, "N", "warm-up decisions after the cold one (default 3)",
                &c->o.n_warmup, .min = 0, .max = 10000000),
        CLI_OPT(NULL, "--rate", CLI_DOUBLE, "R",
                "equal offered load: R requests/s (with --deadline-ms)", &c->o.rate_hz, .lo = 0,
                .hi = INFINITY, .open_lo = 1),
        CLI_OPT(NULL, "--deadline-ms", CLI_DOUBLE, "D",
                "the deadline of each request (with --rate)", &deadline_ms, .lo = 0, .hi = INFINITY,
                .open_lo = 1),
        CLI_OPT(NULL, "--timeout-s", CLI_DOUBLE, "T", "per-decision timeout (default 60)",
                &c->timeout_s, .lo = 0, .hi = INFINITY, .open_lo = 1),
        CLI_ENDROW};
    const cli_opt measure[] = {
        CLI_OPT(NULL, "--power", CLI_STRING, "SPEC",
                "auto (default) | none | rapl | rapl:ZONE,... | powermetrics |\n"
                "powermetrics-cmd:SHELL",
                &c->power),
        CLI_OPT(NULL, "--power-period-ms", CLI_DOUBLE, "MS",
                "sampling period (default 50; powermetrics 100)", &c->period_ms, .lo = 1,
                .hi = INFINITY),
        CLI_OPT(NULL, "--idle-ms", CLI_DOUBLE, "MS",
                "idle block before each round when power is measured (default 1000)", &c->idle_ms,
                .lo = 0, .hi = INFINITY),
        CLI_OPT(NULL, "--powercap-root", CLI_STRING, "DIR",
                "powercap folder (default /sys/class/powercap)", &c->powercap_root),
        CLI_OPT(NULL, "--resamples", CLI_INT, "N", "bootstrap resamples (default 2000)",
                &c->o.n_resamples, .min = 100, .max = 10000000),
        CLI_OPT(NULL, "--confidence", CLI_DOUBLE, "C", "bootstrap confidence (default 0.95)",
                &c->o.confidence, .lo = 0.5, .hi = 1, .open_lo = 1),
        CLI_OPT(NULL, "--seed", CLI_INT64, "S", "bootstrap seed (default 1)", &seed, .min = 0,
                .max = INT64_MAX),
        CLI_OPT(NULL, "--claim", CLI_DOUBLE, "N", "state whether each ratio supports an N x claim",
                &c->o.claim, .lo = 0, .hi = INFINITY, .open_lo = 1),
        CLI_ENDROW};
    const cli_opt output[] = {
        CLI_OPT(NULL, "--out", CLI_STRING, "DIR",
                "samples.csv blocks.csv power.csv summary.json report.md plot.png\n"
                "(default bench-compare)",
                &c->out_dir),
        CLI_OPT(NULL, "--no-plot", CLI_FLAG, NULL, "do not run gnuplot", &c->no_plot),
        CLI_OPT(NULL, "--json", CLI_FLAG, NULL, "print summary.json instead of the Markdown report",
                &c->is_json),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "bench --compare",
        .usage = "--a SPEC (--b SPEC | --b-cmd \"SHELL\") [options]",
        .about = "The A/B harness: A (the baseline) and B run interleaved in blocks; ratios with\n"
                 "bootstrap intervals, energy where a power source is found.\n",
        .opts = {candidates, workload, measure, output}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    c->o.seed = (uint64_t)seed;
    c->o.deadline_s = deadline_ms / 1e3;
    for (int who = 0; who < 2; who++)
        if ((rc = pick_spec(&cmd, c, who, given[who]))) return rc;
    if (!c->spec[0] || !c->spec[1])
        return cli_usage_error(&cmd, "both --a and --b (or --b-cmd) are required");
    if ((c->prompts != NULL) + (c->input != NULL) + (c->snake_games > 0) > 1)
        return cli_usage_error(&cmd, "give one of --prompts, --input or --snake");
    if ((c->o.rate_hz > 0) != (c->o.deadline_s > 0))
        return cli_usage_error(&cmd, "--rate and --deadline-ms go together");
    return CLI_GO;
}

/* The study's table (bench/study_table.h) on stdout and in OUT/study.md:
 * A and B from the run done; with --c, a second run of a fresh A against C
 * (its own outputs in OUT/c/) adds C's column, A's figures staying those of
 * the first run. */
static nc_status study(const cli *c, const nc_bench_workload *w, const nc_compare_result *ab,
                       nc_candidate *const *cand, nc_error *err) {
    nc_study_column cols[3];
    nc_study_column_of(ab, 0, cand[0]->spec, &cols[0]);
    nc_study_column_of(ab, 1, cand[1]->spec, &cols[1]);
    int n = 2;
    nc_compare_result ac;
    memset(&ac, 0, sizeof ac);
    nc_candidate *pair[2] = {NULL, NULL};
    nc_power_sampler *power = NULL;
    nc_status st = NC_OK;
    char dir[4200];
    if (c->spec[2]) {
        st = nc_candidate_open(c->spec[0], c->timeout_s, &pair[0], err);
        if (st == NC_OK) st = nc_candidate_open(c->spec[2], c->timeout_s, &pair[1], err);
        if (st == NC_OK) st = nc_power_open(c->power, c->powercap_root, c->period_ms / 1e3, &power, err);
        if (st == NC_OK) {
            fprintf(stderr, "nectar: comparing A = %s and C = %s\n", c->spec[0], c->spec[2]);
            st = nc_compare_run(pair[0], pair[1], w, power, &c->o, &ac, err);
        }
        char note[256];
        snprintf(dir, sizeof dir, "%s/c", c->out_dir);
        nc_report_input in = {&ac, &c->o, {pair[0], pair[1]}, w};
        if (st == NC_OK) st = nc_report_write(&in, dir, !c->no_plot, note, sizeof note, err);
        if (st == NC_OK) nc_study_column_of(&ac, 1, pair[1]->spec, &cols[n++]);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = st == NC_OK ? open_memstream(&text, &len) : NULL;
    if (st == NC_OK && !f) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    if (f) {
        nc_study_table_print(f, cols, n, ab, &c->o);
        if (c->spec[2])
            fprintf(f, "\nC ran against a second A (`%s/c/report.md`); A's column is the first run's.\n",
                    c->out_dir);
        fclose(f);
        snprintf(dir, sizeof dir, "%s/study.md", c->out_dir);
        st = text ? nc_write_file_atomic(dir, text, len, err)
                  : nc_fail(err, NC_ERR_NOMEM, "out of memory");
        if (st == NC_OK) printf("\n%s", text);
    }
    free(text);
    nc_compare_result_free(&ac);
    nc_power_close(power);
    nc_candidate_close(pair[0]);
    nc_candidate_close(pair[1]);
    return st;
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
    int rc = parse(&c, argc, argv);
    if (rc != CLI_GO) return rc;
    c.o.idle_s = c.idle_ms / 1e3;

    nc_error err = {0};
    nc_bench_workload w;
    const char *wkind = c.prompts ? "prompts" : "input";
    if ((c.snake_games ? nc_workload_snake(c.snake_games, 1, &w, &err)
                       : nc_workload_load(wkind, c.prompts ? c.prompts : c.input, &w, &err)) !=
        NC_OK)
        return cli_fail(&err);
    nc_candidate *cand[2] = {NULL, NULL};
    nc_power_sampler *power = NULL;
    nc_compare_result r;
    memset(&r, 0, sizeof r);
    int exit_code = 1;
    char tmp[4200] = "";
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
    /* the report folder appears whole or not at all (cli_outdir.h) */
    if (cli_outdir_begin_kind(NULL, c.out_dir, "summary.json", "report", tmp, sizeof tmp, &err) !=
            NC_OK ||
        nc_report_write(&in, tmp, !c.no_plot, note, sizeof note, &err) != NC_OK ||
        cli_outdir_commit(tmp, c.out_dir, &err) != NC_OK)
        goto fail;
    tmp[0] = '\0';
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
    if (!c.is_json && (c.o.rate_hz > 0 || c.snake_games || c.spec[2]) &&
        study(&c, &w, &r, cand, &err) != NC_OK)
        goto fail;
    exit_code = 0;
fail:
    if (exit_code) cli_fail(&err);
    cli_outdir_abort(tmp);
    nc_compare_result_free(&r);
    nc_power_close(power);
    nc_candidate_close(cand[0]);
    nc_candidate_close(cand[1]);
    nc_workload_free(&w);
    return exit_code;
}
