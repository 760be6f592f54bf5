/* A stand-in Neural Engine for machines without one: the ane_device
 * interface backed by the MIL interpreter in fp16 mode. It behaves like
 * the ANE where the host can get it wrong: it describes itself only
 * through modelAttributes JSON in the reference's layout, with input and
 * output symbols sorted in reverse name order and procedure ids in reverse
 * declaration order (so binding by declaration order fails); it reads
 * inputs from and writes outputs into 64-byte-row surfaces; it rejects a
 * request that binds an unknown symbol, misses one, passes a surface too
 * small, uses one surface as both input and output, or runs while the
 * host holds a surface lock, or breaks the device's surface policy
 * (uniform allocation sizes per request, a minimum size); submit runs
 * requests in order on its own thread and completes them through the
 * callback, as the ANE's completion handlers do, but refuses a third
 * outstanding request and a plain submit while another model's requests
 * are in flight; submit_event checks that the event chain is met. */
#ifndef NC_ANE_HOST_ANE_FAKE_H
#define NC_ANE_HOST_ANE_FAKE_H

#include "ane_host/ane_device.h"
#include "ane_host/ane_fake_rules.h"

typedef struct ane_fake_options {
    ane_surface_policy surfaces; /* enforced: a request breaking it fails as "status 0x1d" */
    int max_in_flight;           /* a submit beyond it fails (0: ANE_MAX_IN_FLIGHT) */
    int submit_delay_us;         /* each submitted request takes at least this long, so
                                    that submissions overlap as on a device (tests) */
    ane_fake_behaviour behave;   /* what it refuses, how it reports (ane_fake_rules.h) */
} ane_fake_options;

/* ane_fake_new: the default policy (ANE_SURFACE_POLICY_DEFAULT), 2 in flight. */
nc_status ane_fake_new(ane_device *out, nc_error *err);
nc_status ane_fake_new_with(const ane_fake_options *o, ane_device *out, nc_error *err);
void ane_fake_free(ane_device *d);

/* Makes the n-th evaluation from now fail (0: never): error paths. */
void ane_fake_fail_at(ane_device *d, int n);
/* Holds (1) or releases (0) the worker: submitted requests stay
 * outstanding meanwhile (tests of the in-flight limit). */
void ane_fake_pause(ane_device *d, int paused);
/* Evaluations run so far. */
long ane_fake_evaluations(const ane_device *d);
/* Programs opened so far by every fake device of the process (model_open:
 * on the ANE, a compile and load). */
long ane_fake_models_opened(void);
/* model_open calls of every fake device of the process, refused ones
 * included (the compiles a device would count against its budget). */
long ane_fake_compiles(void);

#endif
