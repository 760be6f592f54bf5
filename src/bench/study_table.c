/* The study's table from compare results (study_table.h). */
#include "bench/study_table.h"

#include <math.h>
#include <string.h>

static nc_interval nan_interval(void) {
    nc_interval iv;
    memset(&iv, 0, sizeof iv);
    iv.estimate = iv.lower = iv.upper = NAN;
    return iv;
}

void nc_study_column_of(const nc_compare_result *r, int who, const char *name,
                        nc_study_column *out) {
    const nc_cand_result *c = &r->cand[who];
    memset(out, 0, sizeof *out);
    out->name = name;
    out->completed = c->n_completed;
    out->missed = c->n_missed;
    out->failed = c->n_failed;
    out->t_s = c->t_s;
    out->p50_s = c->latency.p50;
    out->p95_s = c->latency.p95;
    out->elapsed_per_decision_s = c->n_completed ? c->busy_s / c->n_completed : NAN;
    out->has_power = c->has_power;
    out->power_w = c->has_power ? c->power_w : NAN;
    out->interval_energy_j = c->has_power ? c->interval_energy_j : NAN;
    out->energy_per_decision_j = c->has_power ? c->energy_per_decision_j : nan_interval();
    out->is_baseline = who == 0;
    out->S = who ? r->S : nan_interval();
    out->R = who && r->has_power ? r->R : nan_interval();
    out->SxR = who && r->has_power ? r->energy_gain : nan_interval();
}

static void cell(FILE *f, double v, double scale, const char *fmt) {
    if (isfinite(v))
        fprintf(f, fmt, v * scale);
    else
        fputs(" n/a |", f);
}

static void interval_cell(FILE *f, const nc_study_column *c, const nc_interval *iv) {
    if (c->is_baseline)
        fputs(" (baseline) |", f);
    else if (!isfinite(iv->estimate))
        fputs(" n/a |", f);
    else
        fprintf(f, " %.4g [%.4g, %.4g] |", iv->estimate, iv->lower, iv->upper);
}

void nc_study_table_print(FILE *f, const nc_study_column *cols, int n, const nc_compare_result *r,
                          const nc_compare_opts *o) {
    fprintf(f, "## The study's table");
    if (r->is_rate_mode)
        fprintf(f, " (equal offered load: %g requests/s, deadline %g ms)", o->rate_hz,
                o->deadline_s * 1e3);
    fprintf(f, "\n\n|");
    for (int i = 0; i < n; i++)
        fprintf(f, " | %s", cols[i].name);
    fprintf(f, " |\n|---|");
    for (int i = 0; i < n; i++)
        fputs("---|", f);
    fputc('\n', f);
#define ROW(label, expr)                                                                           \
    do {                                                                                           \
        fprintf(f, "| %s |", label);                                                               \
        for (int i = 0; i < n; i++) {                                                              \
            const nc_study_column *c = &cols[i];                                                   \
            expr;                                                                                  \
        }                                                                                          \
        fputc('\n', f);                                                                            \
    } while (0)
    ROW("completed decisions", fprintf(f, " %d |", c->completed));
    ROW("failed", fprintf(f, " %d |", c->failed));
    ROW("deadline misses", r->is_rate_mode ? fprintf(f, " %d |", c->missed) : fputs(" - |", f));
    ROW("t: mean response (ms)", cell(f, c->t_s, 1e3, " %.3f |"));
    ROW("response P50 (ms)", cell(f, c->p50_s, 1e3, " %.3f |"));
    ROW("response P95 (ms)", cell(f, c->p95_s, 1e3, " %.3f |"));
    ROW("elapsed per completed decision (ms)", cell(f, c->elapsed_per_decision_s, 1e3, " %.3f |"));
    ROW("mean power P (W)", cell(f, c->power_w, 1, " %.4g |"));
    ROW("interval energy (J)", cell(f, c->interval_energy_j, 1, " %.4g |"));
    ROW("E: energy per completed decision (J)",
        c->has_power ? fprintf(f, " %.4g [%.4g, %.4g] |", c->energy_per_decision_j.estimate,
                               c->energy_per_decision_j.lower, c->energy_per_decision_j.upper)
                     : fputs(" n/a |", f));
    ROW("S = t_A / t_X", interval_cell(f, c, &c->S));
    ROW("R = P_A / P_X", interval_cell(f, c, &c->R));
    ROW("S x R = E_A / E_X", interval_cell(f, c, &c->SxR));
#undef ROW
    fprintf(f, "\npower: %s: %s%s\n", r->power_kind, r->power_domain,
            r->has_power ? "" : " (no power or energy figure: n/a, not zero)");
    if (r->is_rate_mode)
        fprintf(f,
                "At equal offered load every candidate is offered the same ticks; E counts the "
                "whole offered interval (idling included), so E_A / E_X is the energy gain and "
                "S the ratio of mean response times.\n");
}
