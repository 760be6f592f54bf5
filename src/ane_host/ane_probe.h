/* `nectar ane probe`: a ladder of small programs, each one question that
 * the checker or the runtime has to decide today from second-hand reports
 * (docs/ane-rules.md, docs/ane-bridge.md): gather index types, surface
 * allocation policies, small surfaces, last-axis widths, softmax lengths,
 * silu vs sigmoid*x, elementwise-only and multi-function programs, sync vs
 * async with and without shared events, one fused kernel vs four, and two
 * speed probes (1x1-conv GEMM TOPS, large-weight matvec bandwidth). Each
 * case is built with the MIL builder, checked against the ANE rules, run on
 * a device (compile/load/evaluate, the framework's error text, time) and
 * compared with the MIL interpreter in fp32. On the fake device a case the
 * checker rejects is reported as such and not run (the interpreter would
 * run anything); on the ANE every case runs, which is the point. */
#ifndef NC_ANE_HOST_ANE_PROBE_H
#define NC_ANE_HOST_ANE_PROBE_H

#include <stdio.h>

#include "ane_host/ane_device.h"
#include "ane_host/ane_runner.h"
#include "base/error.h"
#include "mil/ane_profile.h"

typedef struct ane_probe_options {
    const char *work_dir; /* programs are built in work_dir/<case id>/ */
    int is_fake;          /* do not run what the checker rejects */
    int small;            /* speed probes at small sizes (for the interpreter) */
    int repeats;          /* timed evaluations per case (0: 5) */
} ane_probe_options;

typedef struct ane_probe_result {
    char id[40];
    char question[160];
    char checker[240]; /* "accepted", or "rejected [rule]: <first error>" */
    char mode[16];     /* "sync", "async", "async+events" */
    char surfaces[32]; /* "uniform", "mixed", "min 49152", ... */
    char status[24];   /* "ok", "wrong", "compile failed", "eval failed", "rejected", ... */
    char error[400];   /* the device's or the framework's words; "" when ok */
    double max_err;    /* max |device - interpreter fp32| over the outputs */
    double ref_max;    /* max |interpreter fp32| (the scale of max_err) */
    double load_ms;    /* compile + load */
    double eval_us;    /* per request, mean of the timed evaluations */
    double tops;       /* speed probes: tera-ops per second (2 per multiply-add) */
    double gbps;       /* speed probes: weight bytes per second / 1e9 */
} ane_probe_result;

int ane_probe_case_count(void);

/* Runs every case on dev; *out (malloc'd, *n entries) holds one result per
 * case, also when a case failed (that is a result, not an error). Fails
 * only when the probe itself cannot run (work_dir, memory). */
nc_status ane_probe_run(const ane_device *dev, const ane_probe_options *o, ane_probe_result **out,
                        int *n, nc_error *err);

/* What a saved probe profile says the host should do on that chip: the
 * surface policy (uniform unless the mixed-size case passed; the 48 KB
 * minimum unless the 2 KB case passed; the default where unknown) and the
 * run mode (the fastest of the chain4 sync/async/async+events cases that
 * passed; sync when none is known). */
void ane_probe_choose(const mil_ane_profile *p, ane_surface_policy *pol, ane_run_mode *mode);

/* The table a person reads. */
void ane_probe_print(const ane_probe_result *r, int n, FILE *f);

#endif
