/* Linux RAPL through powercap: each zone's energy_uj is a counter that wraps
 * to 0 after max_energy_range_uj. A thread reads the chosen zones every
 * period and at every block boundary (nc_power_mark), so no wrap is missed
 * as long as the period is shorter than the wrap time (minutes at 100 W). */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mmap.h"
#include "base/timer.h"
#include "bench/numarg.h"
#include "bench/power.h"

#define RAPL_MAX_ZONES 16

typedef struct rapl_zone {
    char path[512]; /* .../energy_uj */
    char name[64];
    uint64_t max_range_uj, prev_uj;
    double total_j;
} rapl_zone;

typedef struct rapl_impl {
    rapl_zone zones[RAPL_MAX_ZONES];
    int n_zones;
    pthread_t thread;
    int has_thread;
    atomic_int stop_flag;
} rapl_impl;

uint64_t nc_rapl_delta_uj(uint64_t prev, uint64_t cur, uint64_t max_range_uj) {
    if (cur >= prev) return cur - prev;
    return (max_range_uj - prev) + cur + 1; /* counted up to max, wrapped to 0 */
}

nc_status nc_rapl_parse_uj(const char *text, const char *what, uint64_t *out, nc_error *err) {
    char buf[32];
    size_t n = 0;
    while (text[n] && text[n] != '\n' && n < sizeof buf - 1) {
        buf[n] = text[n];
        n++;
    }
    buf[n] = '\0';
    if (n == 0 || buf[0] == '-' || (text[n] && text[n] != '\n') || (text[n] == '\n' && text[n + 1]))
        return nc_fail(err, NC_ERR_FORMAT, "%s: expected one unsigned integer (microjoules)", what);
    int64_t v;
    if (nc_parse_int64(buf, what, 0, INT64_MAX, &v, err) != NC_OK)
        return nc_fail(err, NC_ERR_FORMAT, "%s: '%s' is not a counter value", what, buf);
    *out = (uint64_t)v;
    return NC_OK;
}

static nc_status read_uj(const char *path, uint64_t *out, nc_error *err) {
    char *text;
    size_t len;
    NC_TRY(nc_read_file(path, &text, &len, err));
    nc_status st = nc_rapl_parse_uj(text, path, out, err);
    free(text);
    return st;
}

static nc_status read_name(const char *dir, char *name, size_t cap, nc_error *err) {
    char path[600];
    snprintf(path, sizeof path, "%s/name", dir);
    char *text;
    size_t len;
    NC_TRY(nc_read_file(path, &text, &len, err));
    size_t n = strcspn(text, "\n");
    if (n >= cap) n = cap - 1;
    memcpy(name, text, n);
    name[n] = '\0';
    free(text);
    return NC_OK;
}

static int is_wanted(const char *name, const char *zones, int is_top) {
    if (!zones) return is_top && strcmp(name, "psys") != 0; /* psys contains the packages */
    size_t n = strlen(name);
    for (const char *p = zones; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, name, n)) return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

/* Adds the wanted zones listed in `dir`. /sys/class/powercap lists every
 * zone at top level (intel-rapl:0, its sub-zone intel-rapl:0:0, ...); a name
 * with one colon is a top-level zone, two colons a part of one. */
static nc_status add_zones(rapl_impl *r, const char *dir, const char *zones, nc_error *err) {
    DIR *d = opendir(dir);
    if (!d) return nc_fail(err, NC_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    struct dirent *e;
    char names[64][128];
    int n_names = 0;
    while ((e = readdir(d)) && n_names < 64)
        if (!strncmp(e->d_name, "intel-rapl:", 11) && strlen(e->d_name) < sizeof names[0])
            snprintf(names[n_names++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    qsort(names, (size_t)n_names, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < n_names; i++) {
        char zdir[512];
        snprintf(zdir, sizeof zdir, "%s/%s", dir, names[i]);
        if (!nc_is_dir(zdir)) continue;
        char name[64];
        if (read_name(zdir, name, sizeof name, err) != NC_OK) continue;
        int is_top = strchr(names[i] + 11, ':') == NULL;
        if (is_wanted(name, zones, is_top)) {
            if (r->n_zones == RAPL_MAX_ZONES)
                return nc_fail(err, NC_ERR_RANGE, "%s: more than %d RAPL zones", dir,
                               RAPL_MAX_ZONES);
            rapl_zone *z = &r->zones[r->n_zones];
            snprintf(z->name, sizeof z->name, "%s", name);
            char p[600];
            snprintf(p, sizeof p, "%s/max_energy_range_uj", zdir);
            NC_TRY(read_uj(p, &z->max_range_uj, err));
            snprintf(z->path, sizeof z->path, "%s/energy_uj", zdir);
            NC_TRY(read_uj(z->path, &z->prev_uj, err));
            if (z->prev_uj > z->max_range_uj)
                return nc_fail(err, NC_ERR_FORMAT, "%s: counter %llu exceeds max_energy_range_uj",
                               z->path, (unsigned long long)z->prev_uj);
            r->n_zones++;
        }
    }
    return NC_OK;
}

/* Reads every zone and appends (now, total joules); caller holds s->lock. */
static void take_reading(nc_power_sampler *s) {
    rapl_impl *r = s->impl;
    double total = 0;
    for (int i = 0; i < r->n_zones; i++) {
        rapl_zone *z = &r->zones[i];
        uint64_t cur;
        nc_error ignored;
        if (read_uj(z->path, &cur, &ignored) == NC_OK) {
            z->total_j += (double)nc_rapl_delta_uj(z->prev_uj, cur, z->max_range_uj) * 1e-6;
            z->prev_uj = cur;
        }
        total += z->total_j;
    }
    nc_error ignored;
    (void)nc_energy_trace_add(&s->trace, nc_now_s(), total, &ignored);
}

static void rapl_mark(nc_power_sampler *s) {
    pthread_mutex_lock(&s->lock);
    take_reading(s);
    pthread_mutex_unlock(&s->lock);
}

static void *rapl_thread(void *arg) {
    nc_power_sampler *s = arg;
    rapl_impl *r = s->impl;
    struct timespec ts = {(time_t)s->period_s,
                          (long)((s->period_s - (double)(time_t)s->period_s) * 1e9)};
    while (!atomic_load(&r->stop_flag)) {
        nanosleep(&ts, NULL);
        rapl_mark(s);
    }
    return NULL;
}

static nc_status rapl_start(nc_power_sampler *s, nc_error *err) {
    rapl_impl *r = s->impl;
    rapl_mark(s);
    atomic_store(&r->stop_flag, 0);
    if (pthread_create(&r->thread, NULL, rapl_thread, s) != 0)
        return nc_fail(err, NC_ERR_INTERNAL, "RAPL sampler: cannot start a thread");
    r->has_thread = 1;
    return NC_OK;
}

static nc_status rapl_stop(nc_power_sampler *s, double t_end, nc_error *err) {
    (void)t_end; /* a reading now is after t_end */
    (void)err;
    rapl_impl *r = s->impl;
    if (r->has_thread) {
        atomic_store(&r->stop_flag, 1);
        pthread_join(r->thread, NULL);
        r->has_thread = 0;
    }
    rapl_mark(s);
    return NC_OK;
}

static void rapl_close(nc_power_sampler *s) {
    nc_error ignored;
    rapl_stop(s, 0, &ignored);
    free(s->impl);
}

static const nc_power_ops rapl_ops = {rapl_start, rapl_mark, rapl_stop, rapl_close};

nc_status nc_rapl_open(const char *root, const char *zones, double period_s, nc_power_sampler **out,
                       nc_error *err) {
    *out = NULL;
    if (!root) root = "/sys/class/powercap";
    rapl_impl *r = calloc(1, sizeof *r);
    if (!r) return nc_fail(err, NC_ERR_NOMEM, "RAPL sampler: out of memory");
    nc_status st = add_zones(r, root, zones, err);
    if (st == NC_OK && r->n_zones == 0)
        st = nc_fail(err, NC_ERR_NOT_FOUND, "%s: no readable RAPL zone%s%s", root,
                     zones ? " named " : "", zones ? zones : "");
    if (st != NC_OK) {
        free(r);
        return nc_fail_prefix(err, "--power rapl");
    }
    nc_power_sampler *s = calloc(1, sizeof *s);
    if (!s) {
        free(r);
        return nc_fail(err, NC_ERR_NOMEM, "RAPL sampler: out of memory");
    }
    s->ops = &rapl_ops;
    s->impl = r;
    s->period_s = period_s > 0 ? period_s : 0.05;
    pthread_mutex_init(&s->lock, NULL);
    snprintf(s->kind, sizeof s->kind, "rapl");
    int len = snprintf(s->domain, sizeof s->domain, "RAPL");
    for (int i = 0; i < r->n_zones && len > 0 && (size_t)len < sizeof s->domain; i++)
        len += snprintf(s->domain + len, sizeof s->domain - (size_t)len, "%s%s", i ? " + " : " ",
                        r->zones[i].name);
    if (len > 0 && (size_t)len < sizeof s->domain)
        snprintf(s->domain + len, sizeof s->domain - (size_t)len,
                 " (CPU-side counters; not whole-machine power)");
    *out = s;
    return NC_OK;
}
