/* The outputs of `nectar bench --compare`: raw samples (samples.csv,
 * blocks.csv, power.csv), the JSON summary (summary.json), the Markdown
 * report (report.md) and a PNG plot drawn by gnuplot when it is installed
 * (plot.png, from plot.gp). Field names are documented in docs/measuring.md. */
#ifndef NC_BENCH_REPORT_H
#define NC_BENCH_REPORT_H

#include <jansson.h>

#include "bench/compare.h"

typedef struct nc_report_input {
    const nc_compare_result *r;
    const nc_compare_opts *o;
    const nc_candidate *cand[2];
    const nc_bench_workload *w;
} nc_report_input;

nc_status nc_report_summary_json(const nc_report_input *in, json_t **out, nc_error *err);
/* Markdown text (malloc'ed). */
nc_status nc_report_markdown(const nc_report_input *in, char **out, nc_error *err);
/* Writes every output into dir (created if missing; each file atomically).
 * *plot_note says what happened to the plot ("plot.png", or "plot skipped:
 * gnuplot not found"). */
nc_status nc_report_write(const nc_report_input *in, const char *dir, int want_plot,
                          char *plot_note, size_t note_cap, nc_error *err);

/* The claim line for one ratio: "10x claim supported (lower bound 10.3 >= 10)"
 * or "measured 1.93x [1.71, 2.16]; no Nx claim (lower bound < 2)". */
void nc_report_claim_text(const nc_interval *iv, double target, char *buf, size_t cap);

#endif
