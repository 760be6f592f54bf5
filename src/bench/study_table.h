/* The feasibility study's table (docs/decision.md, "Equal offered load"):
 * per candidate the completed decisions, deadline misses, response time
 * (mean, P50, P95), mean power P, interval energy and energy per completed
 * decision E; and against the baseline the study's ratios with their
 * bootstrap intervals:
 *   S = t_A / t_X     (t: the mean response time of the completed decisions)
 *   R = P_A / P_X     (P: block energy / block time)
 *   S x R = E_A / E_X (E: interval energy / completed decisions)
 * E = P x (elapsed / completed), so S x R is E_A / E_X exactly when t is the
 * elapsed time per completed decision (saturated runs); at equal offered
 * load the elapsed time per decision is the tick period for every
 * candidate, so E_A / E_X measures R plus the cost of what was not
 * completed, and S is the response-time ratio (reported apart). Power is
 * "n/a" without a sampler, never zero. */
#ifndef NC_BENCH_STUDY_TABLE_H
#define NC_BENCH_STUDY_TABLE_H

#include <stdio.h>

#include "bench/compare.h"

typedef struct nc_study_column {
    const char *name; /* "cpu", "mil", "fake ANE", ... */
    int completed, missed, failed;
    double t_s, p50_s, p95_s; /* response times */
    double elapsed_per_decision_s;
    int has_power;
    double power_w, interval_energy_j;
    nc_interval energy_per_decision_j;
    int is_baseline;
    nc_interval S, R, SxR; /* against the baseline (NaN in the baseline's column) */
} nc_study_column;

/* Candidate `who` (0: A, the baseline; 1: B against A) of an A/B result. */
void nc_study_column_of(const nc_compare_result *r, int who, const char *name,
                        nc_study_column *out);

/* The Markdown table, one column per candidate (the first the baseline),
 * and the power domain's line. */
void nc_study_table_print(FILE *f, const nc_study_column *cols, int n, const nc_compare_result *r,
                          const nc_compare_opts *o);

#endif
