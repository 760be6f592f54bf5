/* Runs the A/B protocol and turns its samples into the figures of the report
 * (definitions in docs/measuring.md). */
#include "bench/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/timer.h"

#define MAX_CONSECUTIVE_FAILURES 10

void nc_compare_opts_default(nc_compare_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_blocks = 5;
    o->per_block = 10;
    o->n_warmup = 3;
    o->n_resamples = 2000;
    o->confidence = 0.95;
    o->seed = 1;
}

static void sleep_until_real(double t_abs) {
    for (;;) {
        double left = t_abs - nc_now_s();
        if (left <= 0) return;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static double clock_now(const nc_compare_opts *o) {
    return o->clock ? o->clock->now_s(o->clock->ctx) : nc_now_s();
}

static void sleep_until(const nc_compare_opts *o, double t_abs) {
    if (o->clock)
        o->clock->sleep_until(o->clock->ctx, t_abs);
    else
        sleep_until_real(t_abs);
}

static nc_status push_decision(nc_compare_result *r, const nc_decision *d, nc_error *err) {
    if (r->n_dec == r->cap_dec) {
        size_t cap = r->cap_dec ? 2 * r->cap_dec : 256;
        nc_decision *p = realloc(r->dec, cap * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "compare: out of memory");
        r->dec = p;
        r->cap_dec = cap;
    }
    r->dec[r->n_dec++] = *d;
    return NC_OK;
}

static nc_status push_block(nc_compare_result *r, const nc_block *b, nc_error *err) {
    if (r->n_blocks == r->cap_blocks) {
        size_t cap = r->cap_blocks ? 2 * r->cap_blocks : 64;
        nc_block *p = realloc(r->blocks, cap * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "compare: out of memory");
        r->blocks = p;
        r->cap_blocks = cap;
    }
    r->blocks[r->n_blocks++] = *b;
    return NC_OK;
}

/* One decision, prepared outside the clock. */
static nc_status timed_run(const nc_compare_opts *o, nc_candidate *c, const nc_bench_item *item,
                           double *secs, int *is_ok, nc_error *run_err, nc_error *err) {
    if (c->ops->prepare) NC_TRY(c->ops->prepare(c, item, err));
    double t0 = clock_now(o);
    nc_status st = c->ops->run(c, item, run_err);
    *secs = clock_now(o) - t0;
    *is_ok = st == NC_OK;
    return NC_OK;
}

typedef struct run_state {
    nc_candidate *cand[2];
    const nc_bench_workload *w;
    size_t next_item[2];
    int consecutive_failures[2];
    nc_error last_failure[2];
} run_state;

static nc_status run_block(run_state *rs, int who, int index, const nc_compare_opts *o,
                           nc_power_sampler *power, nc_compare_result *r, nc_error *err) {
    nc_candidate *c = rs->cand[who];
    nc_block b = {who, index, 0, 0, 0, 0, 0, 0, 0};
    /* reading the counters just inside the block's ends (t0 before the start
     * reading, t1 after the end reading) makes a block's energy exactly the
     * counter difference for sources read on demand: nothing runs between a
     * block's end reading and the next block's start reading */
    double t0 = clock_now(o);
    nc_power_mark(power);
    for (int i = 0; i < o->per_block; i++) {
        size_t item = rs->next_item[who]++ % rs->w->n_items;
        nc_decision d = {who, index, i, item, 0, 0, 0, 0, 0};
        double arrival = o->rate_hz > 0 ? t0 + (double)i / o->rate_hz : 0;
        if (o->rate_hz > 0) {
            if (c->ops->prepare) NC_TRY(c->ops->prepare(c, &rs->w->items[item], err));
            sleep_until(o, arrival);
        }
        double start = clock_now(o);
        if (o->rate_hz > 0) {
            nc_status st = c->ops->run(c, &rs->w->items[item], &rs->last_failure[who]);
            double end = clock_now(o);
            d.service_s = end - start;
            d.is_ok = st == NC_OK;
            d.latency_s = end - arrival; /* queueing behind a slow answer counts */
            d.is_missed = d.latency_s > o->deadline_s;
        } else {
            NC_TRY(timed_run(o, c, &rs->w->items[item], &d.service_s, &d.is_ok,
                             &rs->last_failure[who], err));
            d.latency_s = d.service_s;
        }
        d.t_start_s = start - r->origin_s;
        NC_TRY(push_decision(r, &d, err));
        b.n_done += d.is_ok;
        b.n_failed += !d.is_ok;
        b.n_missed += d.is_missed;
        rs->consecutive_failures[who] = d.is_ok ? 0 : rs->consecutive_failures[who] + 1;
        if (rs->consecutive_failures[who] >= MAX_CONSECUTIVE_FAILURES)
            return nc_fail(err, NC_ERR_IO,
                           "candidate %c (%s): %d decisions in a row failed; last: %s", 'A' + who,
                           c->spec, MAX_CONSECUTIVE_FAILURES, rs->last_failure[who].msg);
    }
    /* equal offered load: the block spans the offered interval even when the
     * candidate finished early (idling is part of its energy) */
    if (o->rate_hz > 0) sleep_until(o, t0 + (double)o->per_block / o->rate_hz);
    nc_power_mark(power);
    double t1 = clock_now(o);
    b.t0_s = t0 - r->origin_s;
    b.t1_s = t1 - r->origin_s;
    return push_block(r, &b, err);
}

static nc_status run_idle_block(const nc_compare_opts *o, int index, nc_power_sampler *power,
                                nc_compare_result *r, nc_error *err) {
    nc_block b = {NC_WHO_IDLE, index, 0, 0, 0, 0, 0, 0, 0};
    double t0 = clock_now(o);
    nc_power_mark(power);
    sleep_until(o, t0 + o->idle_s);
    nc_power_mark(power);
    double t1 = clock_now(o);
    b.t0_s = t0 - r->origin_s;
    b.t1_s = t1 - r->origin_s;
    return push_block(r, &b, err);
}

/* --- statistics ----------------------------------------------------------- */

/* The resampling unit is the block: decisions inside one block share its
 * moment (other load, clocks, temperature), so they are not independent
 * draws, while interleaved blocks are the replicates of the design. Each
 * block contributes (sum of latencies, completed) for t, (joules, seconds)
 * for P and (joules, completed) for rate-mode energy; groups of the same
 * blocks are paired so a block's time and energy are resampled together. */

typedef enum {
    STAT_ENERGY_SAT,      /* lat, pow(paired):                         P t */
    STAT_NET_ENERGY_SAT,  /* lat, pow(paired), idle:                   (P - P_idle) t */
    STAT_GAIN_SAT,        /* latA, powA(p), latB, powB(p):             (tA PA) / (tB PB) */
    STAT_NET_GAIN_SAT,    /* latA, powA(p), latB, powB(p), idle */
    STAT_ENERGY_RATE,     /* epd:                                      E / n */
    STAT_NET_ENERGY_RATE, /* epd, idle:                                E/n - P_idle d */
    STAT_NET_GAIN_RATE    /* epdA, epdB, idle */
} stat_kind;

typedef struct stat_ctx {
    stat_kind kind;
    double d_a, d_b; /* rate mode: block seconds per completed decision */
} stat_ctx;

static double stat_eval(const double *r, void *vctx) {
    const stat_ctx *c = vctx;
    switch (c->kind) {
    case STAT_ENERGY_SAT:
        return r[1] * r[0];
    case STAT_NET_ENERGY_SAT:
        return (r[1] - r[2]) * r[0];
    case STAT_GAIN_SAT:
        return (r[0] / r[2]) * (r[1] / r[3]);
    case STAT_NET_GAIN_SAT:
        return ((r[1] - r[4]) * r[0]) / ((r[3] - r[4]) * r[2]);
    case STAT_ENERGY_RATE:
        return r[0];
    case STAT_NET_ENERGY_RATE:
        return r[0] - r[1] * c->d_a;
    case STAT_NET_GAIN_RATE:
        return (r[0] - r[2] * c->d_a) / (r[1] - r[2] * c->d_b);
    }
    return NAN;
}

static double stat_ratio_of_first(const double *r, void *ctx) {
    (void)ctx;
    return r[0];
}

typedef struct groups_buf {
    double *num, *den;
    size_t n;
    int is_paired;
} groups_buf;

static void groups_free(groups_buf *g) {
    free(g->num);
    free(g->den);
}

static nc_status groups_alloc(groups_buf *g, size_t n, nc_error *err) {
    g->num = malloc((n + 1) * sizeof *g->num);
    g->den = malloc((n + 1) * sizeof *g->den);
    g->n = 0;
    if (!g->num || !g->den) return nc_fail(err, NC_ERR_NOMEM, "compare: out of memory");
    return NC_OK;
}

/* The blocks of `who` (only those with an energy reading when with_energy):
 * lat = (sum of latencies, completed), pow = (joules, seconds) and
 * epd = (joules, completed), pow and epd paired with lat. Idle blocks: pow. */
static nc_status block_groups(const nc_compare_result *r, int who, int with_energy, groups_buf *lat,
                              groups_buf *pow, groups_buf *epd, nc_error *err) {
    NC_TRY(groups_alloc(lat, r->n_blocks, err));
    NC_TRY(groups_alloc(pow, r->n_blocks, err));
    NC_TRY(groups_alloc(epd, r->n_blocks, err));
    pow->is_paired = epd->is_paired = 1;
    for (size_t i = 0; i < r->n_blocks; i++) {
        const nc_block *b = &r->blocks[i];
        if (b->who != who || (with_energy && !b->has_energy)) continue;
        double sum = 0;
        for (size_t k = 0; k < r->n_dec; k++)
            if (r->dec[k].who == who && r->dec[k].block == b->index) sum += r->dec[k].latency_s;
        lat->num[lat->n] = sum;
        lat->den[lat->n++] = b->n_done;
        pow->num[pow->n] = b->energy_j;
        pow->den[pow->n++] = b->t1_s - b->t0_s;
        epd->num[epd->n] = b->energy_j;
        epd->den[epd->n++] = b->n_done;
    }
    return NC_OK;
}

static void interval_nan(nc_interval *iv) {
    memset(iv, 0, sizeof *iv);
    iv->estimate = iv->lower = iv->upper = NAN;
}

/* Bootstraps over the listed groups; NaN interval when a group is empty. */
static nc_status boot(const groups_buf *const *gs, int n, nc_boot_stat_fn fn, void *ctx,
                      const nc_compare_opts *o, nc_interval *out, nc_error *err) {
    nc_boot_group g[8];
    for (int i = 0; i < n; i++) {
        if (gs[i]->n == 0) {
            interval_nan(out);
            return NC_OK;
        }
        g[i] = (nc_boot_group){gs[i]->num, gs[i]->den, gs[i]->n, i > 0 && gs[i]->is_paired};
    }
    return nc_bootstrap(g, n, fn, ctx, o->n_resamples, o->confidence, o->seed, out, err);
}

/* Descriptive figures of one candidate from its decisions and blocks. */
static nc_status describe(nc_compare_result *r, int w, double *tmp, nc_error *err) {
    nc_cand_result *c = &r->cand[w];
    size_t n = 0;
    double sum_lat = 0;
    for (size_t i = 0; i < r->n_dec; i++) {
        const nc_decision *d = &r->dec[i];
        if (d->who != w) continue;
        sum_lat += d->latency_s;
        if (d->is_ok) tmp[n++] = d->latency_s;
        c->n_completed += d->is_ok;
        c->n_failed += !d->is_ok;
        c->n_missed += d->is_missed;
    }
    NC_TRY(nc_summarize(tmp, n, &c->latency, err));
    double e = 0, t = 0;
    int n_energy = 0;
    for (size_t i = 0; i < r->n_blocks; i++) {
        const nc_block *b = &r->blocks[i];
        if (b->who != w) continue;
        c->busy_s += b->t1_s - b->t0_s;
        if (b->has_energy) {
            e += b->energy_j;
            t += b->t1_s - b->t0_s;
            n_energy++;
        }
    }
    c->throughput_per_s = c->busy_s > 0 ? c->n_completed / c->busy_s : 0;
    c->t_s = c->n_completed ? sum_lat / c->n_completed : NAN;
    c->has_power = n_energy > 0;
    c->power_w = c->has_power ? e / t : NAN;
    c->interval_energy_j = c->has_power ? e : NAN;
    return NC_OK;
}

static nc_status compute_stats(nc_compare_result *r, const nc_compare_opts *o, nc_error *err) {
    /* all blocks (for S) and blocks with energy (for everything with P or E) */
    groups_buf lat[2] = {{0}}, unused_p[2] = {{0}}, unused_e[2] = {{0}};
    groups_buf latE[2] = {{0}}, powE[2] = {{0}}, epd[2] = {{0}};
    groups_buf idle_lat = {0}, idle = {0}, idle_epd = {0};
    nc_status st = NC_OK;
    double *tmp = malloc((r->n_dec + 1) * sizeof *tmp);
    if (!tmp) return nc_fail(err, NC_ERR_NOMEM, "compare: out of memory");
    for (int w = 0; w < 2 && st == NC_OK; w++) {
        st = describe(r, w, tmp, err);
        if (st == NC_OK) st = block_groups(r, w, 0, &lat[w], &unused_p[w], &unused_e[w], err);
        if (st == NC_OK) st = block_groups(r, w, 1, &latE[w], &powE[w], &epd[w], err);
    }
    free(tmp);
    if (st == NC_OK) st = block_groups(r, NC_WHO_IDLE, 1, &idle_lat, &idle, &idle_epd, err);
    idle.is_paired = 0;
    epd[0].is_paired = epd[1].is_paired = 0; /* used on their own below */
    if (st != NC_OK) goto done;
    r->has_idle = idle.n > 0;
    interval_nan(&r->idle_power);
    r->idle_power_w = NAN;
    if (r->has_idle) {
        const groups_buf *g1[1] = {&idle};
        st = boot(g1, 1, stat_ratio_of_first, NULL, o, &r->idle_power, err);
        r->idle_power_w = r->idle_power.estimate;
    }
    if (st == NC_OK) {
        const groups_buf *gs[2] = {&lat[0], &lat[1]};
        st = boot(gs, 2, nc_boot_stat_ratio, NULL, o, &r->S, err);
    }
    if (st == NC_OK) {
        const groups_buf *gs[2] = {&powE[0], &powE[1]};
        powE[0].is_paired = powE[1].is_paired = 0;
        st = boot(gs, 2, nc_boot_stat_ratio, NULL, o, &r->R, err);
        powE[0].is_paired = powE[1].is_paired = 1;
    }
    if (st != NC_OK) goto done;
    if (r->is_rate_mode) {
        stat_ctx ctx = {STAT_NET_GAIN_RATE, 0, 0};
        /* seconds of block per completed decision: the offered interval */
        ctx.d_a = r->cand[0].n_completed ? r->cand[0].busy_s / r->cand[0].n_completed : NAN;
        ctx.d_b = r->cand[1].n_completed ? r->cand[1].busy_s / r->cand[1].n_completed : NAN;
        const groups_buf *gs[2] = {&epd[0], &epd[1]};
        st = boot(gs, 2, nc_boot_stat_ratio, NULL, o, &r->energy_gain, err);
        for (int w = 0; w < 2 && st == NC_OK; w++) {
            stat_ctx cw = {STAT_ENERGY_RATE, w == 0 ? ctx.d_a : ctx.d_b, 0};
            const groups_buf *g1[1] = {&epd[w]};
            st = boot(g1, 1, stat_eval, &cw, o, &r->cand[w].energy_per_decision_j, err);
            cw.kind = STAT_NET_ENERGY_RATE;
            const groups_buf *g2[2] = {&epd[w], &idle};
            if (st == NC_OK)
                st = boot(g2, 2, stat_eval, &cw, o, &r->cand[w].net_energy_per_decision_j, err);
        }
        const groups_buf *g3[3] = {&epd[0], &epd[1], &idle};
        if (st == NC_OK) st = boot(g3, 3, stat_eval, &ctx, o, &r->net_energy_gain, err);
    } else {
        stat_ctx ctx = {STAT_GAIN_SAT, 0, 0};
        const groups_buf *gs[4] = {&latE[0], &powE[0], &latE[1], &powE[1]};
        st = boot(gs, 4, stat_eval, &ctx, o, &r->energy_gain, err);
        for (int w = 0; w < 2 && st == NC_OK; w++) {
            stat_ctx cw = {STAT_ENERGY_SAT, 0, 0};
            const groups_buf *g2[2] = {&latE[w], &powE[w]};
            st = boot(g2, 2, stat_eval, &cw, o, &r->cand[w].energy_per_decision_j, err);
            cw.kind = STAT_NET_ENERGY_SAT;
            const groups_buf *g3[3] = {&latE[w], &powE[w], &idle};
            if (st == NC_OK)
                st = boot(g3, 3, stat_eval, &cw, o, &r->cand[w].net_energy_per_decision_j, err);
        }
        ctx.kind = STAT_NET_GAIN_SAT;
        const groups_buf *g5[5] = {&latE[0], &powE[0], &latE[1], &powE[1], &idle};
        if (st == NC_OK) st = boot(g5, 5, stat_eval, &ctx, o, &r->net_energy_gain, err);
    }
done:
    for (int w = 0; w < 2; w++) {
        groups_free(&lat[w]);
        groups_free(&unused_p[w]);
        groups_free(&unused_e[w]);
        groups_free(&latE[w]);
        groups_free(&powE[w]);
        groups_free(&epd[w]);
    }
    groups_free(&idle_lat);
    groups_free(&idle);
    groups_free(&idle_epd);
    return st;
}

/* --- the protocol ----------------------------------------------------------- */

static nc_status cold_and_warmup(run_state *rs, int who, const nc_compare_opts *o,
                                 nc_compare_result *r, nc_error *err) {
    nc_candidate *c = rs->cand[who];
    nc_cand_result *cr = &r->cand[who];
    double t0 = clock_now(o);
    if (c->ops->load(c, err) != NC_OK)
        return nc_fail_prefix(err, "candidate %c (%s): load", 'A' + who, c->spec);
    cr->load_s = clock_now(o) - t0;
    int is_ok;
    nc_error run_err = {0};
    size_t item = rs->next_item[who]++ % rs->w->n_items;
    NC_TRY(timed_run(o, c, &rs->w->items[item], &cr->first_s, &is_ok, &run_err, err));
    if (!is_ok)
        return nc_fail(err, NC_ERR_IO, "candidate %c (%s): first decision failed: %s", 'A' + who,
                       c->spec, run_err.msg);
    double sum = 0;
    for (int i = 0; i < o->n_warmup; i++) {
        double s;
        item = rs->next_item[who]++ % rs->w->n_items;
        NC_TRY(timed_run(o, c, &rs->w->items[item], &s, &is_ok, &run_err, err));
        if (!is_ok)
            return nc_fail(err, NC_ERR_IO, "candidate %c (%s): warm-up decision failed: %s",
                           'A' + who, c->spec, run_err.msg);
        sum += s;
    }
    cr->warmup_mean_s = o->n_warmup ? sum / o->n_warmup : NAN;
    return NC_OK;
}

nc_status nc_compare_run(nc_candidate *a, nc_candidate *b, const nc_bench_workload *w,
                         nc_power_sampler *power, const nc_compare_opts *o, nc_compare_result *out,
                         nc_error *err) {
    memset(out, 0, sizeof *out);
    if (o->n_blocks < 5)
        return nc_fail(err, NC_ERR_INVALID, "--blocks %d: at least 5 blocks per candidate",
                       o->n_blocks);
    if (o->per_block < 1 || o->n_warmup < 0)
        return nc_fail(err, NC_ERR_INVALID, "--per-block must be >= 1 and --warmup >= 0");
    if (o->rate_hz < 0 || (o->rate_hz > 0 && !(o->deadline_s > 0)))
        return nc_fail(err, NC_ERR_INVALID, "--rate needs a positive rate and --deadline-ms");
    if (!w->n_items) return nc_fail(err, NC_ERR_INVALID, "compare: empty workload");
    out->origin_s = clock_now(o);
    out->is_rate_mode = o->rate_hz > 0;
    out->has_power = nc_power_is_active(power);
    snprintf(out->power_kind, sizeof out->power_kind, "%s", power ? power->kind : "none");
    snprintf(out->power_domain, sizeof out->power_domain, "%s",
             power ? power->domain : "not measured");
    run_state rs;
    memset(&rs, 0, sizeof rs);
    rs.cand[0] = a;
    rs.cand[1] = b;
    rs.w = w;
    /* cold load + first decision, then warm-up: reported, not in the stats */
    NC_TRY(cold_and_warmup(&rs, NC_WHO_A, o, out, err));
    NC_TRY(cold_and_warmup(&rs, NC_WHO_B, o, out, err));
    /* both candidates start the blocks on the same item */
    rs.next_item[0] = rs.next_item[1] = 0;
    nc_status st = NC_OK;
    if (out->has_power) st = nc_power_start(power, err);
    int use_idle = out->has_power && o->idle_s > 0;
    for (int k = 0; k < o->n_blocks && st == NC_OK; k++) {
        if (use_idle) st = run_idle_block(o, k, power, out, err);
        if (st == NC_OK) st = run_block(&rs, NC_WHO_A, k, o, power, out, err);
        if (st == NC_OK) st = run_block(&rs, NC_WHO_B, k, o, power, out, err);
    }
    if (use_idle && st == NC_OK) st = run_idle_block(o, o->n_blocks, power, out, err);
    if (out->has_power) {
        nc_error stop_err;
        double t_end =
            out->n_blocks ? out->blocks[out->n_blocks - 1].t1_s + out->origin_s : clock_now(o);
        nc_power_stop(power, t_end, &stop_err);
        for (size_t i = 0; i < out->n_blocks; i++) {
            nc_block *bl = &out->blocks[i];
            nc_error ignored;
            bl->has_energy =
                nc_power_energy(power, bl->t0_s + out->origin_s, bl->t1_s + out->origin_s,
                                &bl->energy_j, &ignored) == NC_OK;
            out->n_blocks_without_energy += !bl->has_energy;
        }
        if (st == NC_OK) st = nc_power_copy_trace(power, &out->trace, err);
    }
    if (st == NC_OK) st = compute_stats(out, o, err);
    if (st != NC_OK) nc_compare_result_free(out);
    return st;
}

void nc_compare_result_free(nc_compare_result *r) {
    free(r->dec);
    free(r->blocks);
    nc_energy_trace_free(&r->trace);
    r->dec = NULL;
    r->blocks = NULL;
    r->n_dec = r->n_blocks = r->cap_dec = r->cap_blocks = 0;
}
