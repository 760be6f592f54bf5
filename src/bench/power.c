/* The energy trace shared by all power sources, and the dispatch from a
 * --power spec to a source (power_rapl.c, power_powermetrics.c). */
#include "bench/power.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nc_status nc_energy_trace_add(nc_energy_trace *tr, double t_s, double energy_j, nc_error *err) {
    if (tr->n && t_s < tr->pts[tr->n - 1].t_s)
        return nc_fail(err, NC_ERR_INTERNAL, "energy trace: time went backwards");
    if (tr->n == tr->cap) {
        size_t cap = tr->cap ? 2 * tr->cap : 256;
        nc_energy_point *p = realloc(tr->pts, cap * sizeof *p);
        if (!p) return nc_fail(err, NC_ERR_NOMEM, "energy trace: out of memory");
        tr->pts = p;
        tr->cap = cap;
    }
    tr->pts[tr->n].t_s = t_s;
    tr->pts[tr->n].energy_j = energy_j;
    tr->n++;
    return NC_OK;
}

/* Cumulative energy at t, interpolated between the points around it. */
static double energy_at(const nc_energy_trace *tr, double t) {
    size_t lo = 0, hi = tr->n - 1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (tr->pts[mid].t_s <= t)
            lo = mid;
        else
            hi = mid;
    }
    const nc_energy_point *a = &tr->pts[lo], *b = &tr->pts[hi];
    if (b->t_s <= a->t_s) return b->energy_j;
    double w = (t - a->t_s) / (b->t_s - a->t_s);
    if (w < 0) w = 0;
    if (w > 1) w = 1;
    return a->energy_j + w * (b->energy_j - a->energy_j);
}

nc_status nc_energy_trace_between(const nc_energy_trace *tr, double t0, double t1, double *joules,
                                  nc_error *err) {
    if (tr->n < 2 || t0 < tr->pts[0].t_s || t1 > tr->pts[tr->n - 1].t_s || t1 < t0)
        return nc_fail(err, NC_ERR_RANGE,
                       "power trace does not cover the interval [%.3f, %.3f] s (%zu points)", t0,
                       t1, tr->n);
    *joules = energy_at(tr, t1) - energy_at(tr, t0);
    return NC_OK;
}

void nc_energy_trace_free(nc_energy_trace *tr) {
    free(tr->pts);
    memset(tr, 0, sizeof *tr);
}

nc_status nc_power_open(const char *spec, const char *powercap_root, double period_s,
                        nc_power_sampler **out, nc_error *err) {
    *out = NULL;
    if (!spec || !strcmp(spec, "none")) {
        nc_power_sampler *s = calloc(1, sizeof *s);
        if (!s) return nc_fail(err, NC_ERR_NOMEM, "power sampler: out of memory");
        snprintf(s->kind, sizeof s->kind, "none");
        snprintf(s->domain, sizeof s->domain, "not measured");
        pthread_mutex_init(&s->lock, NULL);
        *out = s;
        return NC_OK;
    }
    if (!strcmp(spec, "auto")) {
        nc_error ignored;
        if (nc_rapl_open(powercap_root, NULL, period_s, out, &ignored) == NC_OK) return NC_OK;
        return nc_power_open("none", NULL, period_s, out, err);
    }
    if (!strcmp(spec, "rapl")) return nc_rapl_open(powercap_root, NULL, period_s, out, err);
    if (!strncmp(spec, "rapl:", 5))
        return nc_rapl_open(powercap_root, spec + 5, period_s, out, err);
    if (!strcmp(spec, "powermetrics")) {
        char cmd[256];
        int ms = (int)(period_s * 1000 + 0.5);
        snprintf(cmd, sizeof cmd, "powermetrics --samplers cpu_power,gpu_power -b 1 -i %d",
                 ms < 10 ? 10 : ms);
        return nc_powermetrics_open(cmd, period_s, out, err);
    }
    if (!strncmp(spec, "powermetrics-cmd:", 17))
        return nc_powermetrics_open(spec + 17, period_s, out, err);
    return nc_fail(err, NC_ERR_INVALID,
                   "--power %s: unknown (none, auto, rapl, rapl:ZONE,..., powermetrics, "
                   "powermetrics-cmd:CMD)",
                   spec);
}

int nc_power_is_active(const nc_power_sampler *s) {
    return s && s->ops != NULL;
}

/* A NULL sampler behaves as "none". */
nc_status nc_power_start(nc_power_sampler *s, nc_error *err) {
    return s && s->ops ? s->ops->start(s, err) : NC_OK;
}

void nc_power_mark(nc_power_sampler *s) {
    if (s && s->ops && s->ops->mark) s->ops->mark(s);
}

nc_status nc_power_stop(nc_power_sampler *s, double t_end, nc_error *err) {
    return s && s->ops ? s->ops->stop(s, t_end, err) : NC_OK;
}

nc_status nc_power_energy(nc_power_sampler *s, double t0, double t1, double *joules,
                          nc_error *err) {
    pthread_mutex_lock(&s->lock);
    nc_status st = nc_energy_trace_between(&s->trace, t0, t1, joules, err);
    pthread_mutex_unlock(&s->lock);
    return st;
}

nc_status nc_power_copy_trace(nc_power_sampler *s, nc_energy_trace *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->lock);
    nc_status st = NC_OK;
    for (size_t i = 0; i < s->trace.n && st == NC_OK; i++)
        st = nc_energy_trace_add(out, s->trace.pts[i].t_s, s->trace.pts[i].energy_j, err);
    pthread_mutex_unlock(&s->lock);
    if (st != NC_OK) nc_energy_trace_free(out);
    return st;
}

void nc_power_close(nc_power_sampler *s) {
    if (!s) return;
    if (s->ops && s->ops->close) s->ops->close(s);
    nc_energy_trace_free(&s->trace);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
