/* Waiting for asynchronously submitted requests: a counter of requests in
 * flight that completion handlers decrement from the device's thread, and
 * the first failure they report. The host submits a whole token's requests
 * back to back, then waits once; this is what kept the ANE busy and cut
 * per-dispatch overhead 3-4x against synchronous calls (docs/ane-rules.md). The
 * wait spins briefly on the atomic, then yields, then sleeps in short
 * steps: a dispatch takes tens of microseconds, so a condition variable's
 * wake-up latency would be a large share of it. */
#ifndef NC_ANE_HOST_ANE_WAIT_H
#define NC_ANE_HOST_ANE_WAIT_H

#include <stdatomic.h>

#include "base/error.h"

typedef struct ane_wait {
    atomic_int pending;
    atomic_int failed; /* 1 once a request failed; msg is then set */
    char msg[200];     /* written only by the first failure */
} ane_wait;

void ane_wait_init(ane_wait *w);
/* Before each submit. */
void ane_wait_add(ane_wait *w, int n);
/* The completion handler (an ane_done_fn; user = the ane_wait). */
void ane_wait_done(void *w, nc_status st, const char *msg);
/* Blocks until nothing is pending; the first failure, if any, comes back
 * as NC_ERR_IO with the handler's message. timeout_s > 0 bounds the wait
 * (NC_ERR_IO "timed out"): requests still pending then may complete later,
 * so the ane_wait must outlive them (keep it in a long-lived struct, never
 * on the stack of a function that returns after a timeout). */
nc_status ane_wait_all(ane_wait *w, double timeout_s, nc_error *err);
/* Blocks until fewer than n are pending (n = 1: ane_wait_all); a failure
 * already reported comes back as in ane_wait_all. Keeps at most n - 1 in
 * flight before the next submit (the framework's limit of 2 per QoS). */
nc_status ane_wait_below(ane_wait *w, int n, double timeout_s, nc_error *err);

#endif
