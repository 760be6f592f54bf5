/* The decode kernel chosen in the engine (bench_tune.h). */
#include "bench_tune.h"

#include <string.h>

#include "base/timer.h"
#include "bench/stats.h"
#include "cli_env.h"

#define SHORTLIST 4

/* One timed decode of BENCH_TUNE_TOKENS tokens from an empty cache: weight
 * bytes per CPU-second of the process, times its threads (the probe's
 * unit: GB/s had the threads had their cores). */
static nc_status decode_rate(engine *m, engine_seq *s, const int32_t *tokens, float *logits,
                             double *rate, nc_error *err) {
    engine_seq_truncate(m, s, 0);
    double c0 = nc_process_cpu_s();
    for (int i = 0; i < BENCH_TUNE_TOKENS; i++)
        NC_TRY(engine_forward(m, s, tokens + i, 1, logits, err));
    double dc = nc_process_cpu_s() - c0;
    int th = m->n_threads > 0 ? m->n_threads : 1;
    *rate = dc > 0 ? (double)m->weight_bytes_per_token * BENCH_TUNE_TOKENS / dc * th / 1e9 : 0;
    return NC_OK;
}

nc_status bench_tune(engine *m, engine_seq *s, const int32_t *tokens, float *logits, int threads,
                     FILE *out, const cpu_tuning **tuning, nc_error *err) {
    const char *path = (*tuning)->file;
    const char *dtype = m->weight_dtype ? m->weight_dtype : "?";
    cpu_slot slot = !strcmp(dtype, "bf16") ? CPU_SLOT_DECODE_BF16
                    : !strcmp(dtype, "q8") ? CPU_SLOT_DECODE_Q8
                                           : CPU_SLOT_N;
    if (slot == CPU_SLOT_N || !m->weight_bytes_per_token) {
        fprintf(out,
                "--tune: nothing to time on %s weights (bf16 and q8 only: q4 rows are laid "
                "out for their kernel at load)\n",
                dtype);
        return NC_OK;
    }
    const cpu_slot_report *rep = &(*tuning)->slot[slot];
    if (cpu_tune_forced(slot)) {
        fprintf(out, "--tune: %s is forced to %s (NECTAR_BF16); nothing to time\n", rep->slot,
                cpu_tune_forced(slot));
        return NC_OK;
    }
    const char *names[SHORTLIST];
    double probe[SHORTLIST];
    int n = 0;
    /* a wisdom file probed at this run's start has the rates already */
    NC_TRY(cpu_tune_shortlist(slot, rep, threads, 0, SHORTLIST, names, probe, &n, err));
    if (n < 2) {
        fprintf(out, "--tune: %s has one candidate here (%s); nothing to time\n", rep->slot,
                n ? names[0] : "?");
        return NC_OK;
    }
    /* interleaved rounds: a slow minute of a shared machine falls on every
     * candidate alike */
    double r[SHORTLIST][BENCH_TUNE_ROUNDS], med[SHORTLIST];
    nc_status st = NC_OK;
    for (int round = 0; round < BENCH_TUNE_ROUNDS && st == NC_OK; round++)
        for (int i = 0; i < n && st == NC_OK; i++) {
            st = cpu_tune_force(slot, names[i], err);
            if (st == NC_OK) st = decode_rate(m, s, tokens, logits, &r[i][round], err);
        }
    cpu_tune_force(slot, NULL, err);
    if (st != NC_OK) return st;
    int best = 0;
    for (int i = 0; i < n; i++) {
        nc_summary sum;
        NC_TRY(nc_summarize(r[i], BENCH_TUNE_ROUNDS, &sum, err));
        med[i] = sum.p50;
        if (med[i] > med[best]) best = i;
    }
    char slot_name[sizeof rep->slot];
    snprintf(slot_name, sizeof slot_name, "%s", rep->slot);
    fprintf(out,
            "engine tuning of %s (%d tokens x %d interleaved rounds; the median, GB/s at a full "
            "CPU share; the probe's rate in brackets):\n",
            slot_name, BENCH_TUNE_TOKENS, BENCH_TUNE_ROUNDS);
    for (int i = 0; i < n; i++)
        fprintf(out, "  %-12s %6.1f  (probe %.1f)%s%s\n", names[i], med[i], probe[i],
                i == 0 ? "  the default" : "", i == best ? "  <- chosen" : "");
    char note[320];
    if (cpu_wisdom_keep(path, slot, names[best], med[best], note, sizeof note))
        fprintf(out, "  kept in %s\n", path);
    else
        fprintf(out, "  %s; the choice holds for this run\n", note);
    /* the rest of the run reads the file back, as later runs will; a file
     * that could not be written leaves the choice forced for this run */
    cpu_tune_once_again();
    NC_TRY(cli_env_tune_kernels(threads, tuning, err));
    if (strcmp((*tuning)->slot[slot].kernel, names[best]))
        NC_TRY(cpu_tune_force(slot, names[best], err));
    return NC_OK;
}
