/* The A/B protocol of `nectar bench --compare` (docs/measuring.md): cold load and
 * first decision measured and reported apart, warm-up, then interleaved
 * blocks A B A B ... (with idle blocks between rounds when power is
 * measured), per-decision latency samples, and ratios with bootstrap
 * intervals. A is the baseline: S = t_A/t_B and R = P_A/P_B above 1 mean B
 * is faster / draws less power. */
#ifndef NC_BENCH_COMPARE_H
#define NC_BENCH_COMPARE_H

#include <stdint.h>

#include "bench/candidate.h"
#include "bench/power.h"
#include "bench/stats.h"

/* The clock the harness times decisions and paces requests with. Tests
 * drive a virtual one, so what they assert does not depend on the speed or
 * load of the machine they run on. */
typedef struct nc_compare_clock {
    double (*now_s)(void *ctx);
    void (*sleep_until)(void *ctx, double t_abs_s);
    void *ctx;
} nc_compare_clock;

typedef struct nc_compare_opts {
    int n_blocks;      /* per candidate, at least 5 */
    int per_block;     /* decisions per block */
    int n_warmup;      /* warm-up decisions after the first (cold) one */
    double idle_s;     /* idle block length when power is measured; 0 = none */
    double rate_hz;    /* > 0: equal offered load at this request rate */
    double deadline_s; /* rate mode: a response slower than this is a miss */
    int n_resamples;
    double confidence;
    uint64_t seed;
    double claim;                  /* > 0: test an "N x" claim against the lower bounds */
    const nc_compare_clock *clock; /* NULL: the monotonic clock (nc_now_s) */
} nc_compare_opts;

void nc_compare_opts_default(nc_compare_opts *o);

enum { NC_WHO_A = 0, NC_WHO_B = 1, NC_WHO_IDLE = 2 };

typedef struct nc_decision {
    int who, block, index; /* block number of that candidate, index in the block */
    size_t item;           /* workload item */
    double t_start_s;      /* when it started, from the run's origin */
    double latency_s;      /* saturated: its run time; rate mode: completion - arrival */
    double service_s;      /* its run time */
    int is_ok, is_missed;
} nc_decision;

typedef struct nc_block {
    int who, index;
    double t0_s, t1_s; /* from the run's origin */
    int n_done, n_failed, n_missed;
    int has_energy;
    double energy_j;
} nc_block;

typedef struct nc_cand_result {
    double load_s, first_s; /* cold: load, then the first decision */
    double warmup_mean_s;   /* NAN without warm-up */
    nc_summary latency;     /* completed decisions in the blocks */
    int n_completed, n_failed, n_missed;
    double busy_s;           /* sum of its block durations */
    double throughput_per_s; /* completed / busy_s */
    double t_s;              /* sum of latencies / completed: the t of S */
    int has_power;
    double power_w; /* sum of block energy / sum of block time */
    double interval_energy_j;
    nc_interval energy_per_decision_j;     /* raw */
    nc_interval net_energy_per_decision_j; /* idle-subtracted (needs idle blocks) */
} nc_cand_result;

typedef struct nc_compare_result {
    nc_decision *dec;
    size_t n_dec, cap_dec;
    nc_block *blocks;
    size_t n_blocks, cap_blocks;
    nc_cand_result cand[2];
    double origin_s; /* nc_now_s() at the start: CSV times are relative to it */
    int is_rate_mode;
    int has_power, has_idle;
    char power_kind[32], power_domain[256];
    double idle_power_w;
    nc_interval idle_power;
    int n_blocks_without_energy; /* power measured, but no trace covers them */
    nc_interval S, R, energy_gain, net_energy_gain;
    nc_energy_trace trace; /* the power samples, for the raw output and plot */
} nc_compare_result;

nc_status nc_compare_run(nc_candidate *a, nc_candidate *b, const nc_bench_workload *w,
                         nc_power_sampler *power, const nc_compare_opts *o, nc_compare_result *out,
                         nc_error *err);
void nc_compare_result_free(nc_compare_result *r);

#endif
