/* Pluggable power samplers for the harness. Every source is reduced to one
 * shape: a trace of (time, cumulative joules) points, so energy over any
 * interval is a difference of the trace linearly interpolated at its ends
 * (piecewise-constant power between points). Sources:
 *   rapl          Linux powercap counters (energy_uj, wrap-around handled)
 *   powermetrics  macOS `powermetrics` text or plist output (CPU/GPU/ANE mW)
 *   none          no power figures; reports say so.
 * The measured domain is named in `domain`: it is never "the machine". */
#ifndef NC_BENCH_POWER_H
#define NC_BENCH_POWER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct nc_energy_point {
    double t_s;      /* nc_now_s() clock */
    double energy_j; /* cumulative since the sampler started */
} nc_energy_point;

typedef struct nc_energy_trace {
    nc_energy_point *pts;
    size_t n, cap;
} nc_energy_trace;

/* Appends a point; times must not decrease. */
nc_status nc_energy_trace_add(nc_energy_trace *tr, double t_s, double energy_j, nc_error *err);
/* Joules in [t0, t1] by interpolation; NC_ERR_RANGE when the trace does not
 * cover the interval. */
nc_status nc_energy_trace_between(const nc_energy_trace *tr, double t0, double t1, double *joules,
                                  nc_error *err);
void nc_energy_trace_free(nc_energy_trace *tr);

typedef struct nc_power_sampler nc_power_sampler;

typedef struct nc_power_ops {
    /* Starts background sampling (a thread). */
    nc_status (*start)(nc_power_sampler *s, nc_error *err);
    /* Records a point now if the source can be read on demand (RAPL). */
    void (*mark)(nc_power_sampler *s);
    /* Stops sampling once the trace covers t_end (bounded wait). */
    nc_status (*stop)(nc_power_sampler *s, double t_end, nc_error *err);
    void (*close)(nc_power_sampler *s);
} nc_power_ops;

struct nc_power_sampler {
    const nc_power_ops *ops; /* NULL for "none" */
    char kind[32];           /* "rapl", "powermetrics", "none" */
    char domain[256];        /* what the joules cover, in words */
    double period_s;         /* sampling period */
    nc_energy_trace trace;   /* guarded by lock */
    pthread_mutex_t lock;
    void *impl;
};

/* spec: "none", "auto" (rapl when readable, else none), "rapl",
 * "rapl:ZONE,ZONE" (zone names such as package-0, dram, psys),
 * "powermetrics" (runs `powermetrics --samplers cpu_power,gpu_power -b 1 -i MS`),
 * "powermetrics-cmd:CMD" (any shell command printing powermetrics output;
 * also how a recorded file is replayed). powercap_root: NULL for
 * /sys/class/powercap. */
nc_status nc_power_open(const char *spec, const char *powercap_root, double period_s,
                        nc_power_sampler **out, nc_error *err);
int nc_power_is_active(const nc_power_sampler *s);
nc_status nc_power_start(nc_power_sampler *s, nc_error *err);
void nc_power_mark(nc_power_sampler *s);
nc_status nc_power_stop(nc_power_sampler *s, double t_end, nc_error *err);
/* Joules in [t0, t1] (thread-safe). */
nc_status nc_power_energy(nc_power_sampler *s, double t0, double t1, double *joules, nc_error *err);
/* A copy of the trace (for raw output and plots); free with nc_energy_trace_free. */
nc_status nc_power_copy_trace(nc_power_sampler *s, nc_energy_trace *out, nc_error *err);
void nc_power_close(nc_power_sampler *s);

/* --- RAPL / powercap ----------------------------------------------------- */

/* Energy counted between two readings of a counter that wraps to 0 after
 * max_range_uj: cur - prev, or (max_range_uj - prev) + cur + 1 after a wrap. */
uint64_t nc_rapl_delta_uj(uint64_t prev, uint64_t cur, uint64_t max_range_uj);
/* Parses a sysfs counter file's text ("123456\n"); `what` names the file. */
nc_status nc_rapl_parse_uj(const char *text, const char *what, uint64_t *out, nc_error *err);
nc_status nc_rapl_open(const char *root, const char *zones, double period_s, nc_power_sampler **out,
                       nc_error *err);

/* --- macOS powermetrics -------------------------------------------------- */

typedef struct nc_pm_sample {
    double t_s;       /* when the sample's first byte arrived (its interval's end) */
    double elapsed_s; /* the sample's own interval */
    double cpu_w, gpu_w, ane_w, combined_w; /* NAN when absent */
} nc_pm_sample;

/* Incremental parser: text samples start at "*** Sampled system activity";
 * plist samples are NUL-separated documents. */
typedef struct nc_pm_stream {
    char *buf;
    size_t len, cap;
    size_t chunk_start; /* where the current, incomplete sample begins */
    int has_chunk;      /* a sample header (or plist start) has been seen */
    int is_plist;       /* decided by the first non-blank byte */
    double chunk_t_s;   /* arrival time of the current sample's first byte */
    int n_emitted, n_bad;
} nc_pm_stream;

/* Appends bytes that arrived at now_s; calls emit for every complete sample
 * (samples without any power figure are counted in n_bad and skipped). */
nc_status nc_pm_feed(nc_pm_stream *st, const char *data, size_t len, double now_s,
                     void (*emit)(const nc_pm_sample *, void *), void *ctx, nc_error *err);
/* End of input: parses the last sample. */
nc_status nc_pm_finish(nc_pm_stream *st, void (*emit)(const nc_pm_sample *, void *), void *ctx,
                       nc_error *err);
void nc_pm_stream_free(nc_pm_stream *st);
/* Parses one sample's text (either form). NC_ERR_FORMAT when it holds no
 * power figure. */
nc_status nc_pm_parse_sample(const char *text, size_t len, nc_pm_sample *out, nc_error *err);
/* The watts the sampler integrates: combined when present, else the sum of
 * the components present (CPU + GPU + ANE). NAN when none. */
double nc_pm_total_w(const nc_pm_sample *s);
nc_status nc_powermetrics_open(const char *cmd, double period_s, nc_power_sampler **out,
                               nc_error *err);

#endif
