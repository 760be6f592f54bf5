/* The in-flight counter and its wait (ane_wait.h). The failure message is
 * written before `failed` is published with release order, so a waiter
 * that sees failed == 1 (acquire) reads a complete message. */
#include "ane_host/ane_wait.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/timer.h"

void ane_wait_init(ane_wait *w) {
    atomic_init(&w->pending, 0);
    atomic_init(&w->failed, 0);
    w->msg[0] = '\0';
}

void ane_wait_add(ane_wait *w, int n) {
    atomic_fetch_add_explicit(&w->pending, n, memory_order_relaxed);
}

void ane_wait_done(void *user, nc_status st, const char *msg) {
    ane_wait *w = user;
    if (st != NC_OK) {
        int expected = 0;
        /* claim with 2 ("writing"), then publish 1 */
        if (atomic_compare_exchange_strong_explicit(&w->failed, &expected, 2, memory_order_acq_rel,
                                                    memory_order_relaxed)) {
            snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "request failed");
            atomic_store_explicit(&w->failed, 1, memory_order_release);
        }
    }
    atomic_fetch_sub_explicit(&w->pending, 1, memory_order_acq_rel);
}

nc_status ane_wait_all(ane_wait *w, double timeout_s, nc_error *err) {
    return ane_wait_below(w, 1, timeout_s, err);
}

nc_status ane_wait_below(ane_wait *w, int n, double timeout_s, nc_error *err) {
    double t0 = timeout_s > 0 ? nc_now_s() : 0;
    for (unsigned spin = 0; atomic_load_explicit(&w->pending, memory_order_acquire) >= n; spin++) {
        if (spin < 1000) continue;
        if (timeout_s > 0 && (spin & 63) == 0 && nc_now_s() - t0 > timeout_s)
            return nc_fail(err, NC_ERR_IO, "%d requests did not complete within %.1f s",
                           atomic_load(&w->pending), timeout_s);
        if (spin < 2000) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, 20000}; /* 20 us: about one dispatch */
        nanosleep(&ts, NULL);
    }
    /* with n = 1, pending reached 0 after every handler's store, so failed
     * is 0 or 1; with n > 1 a handler may be writing (2): not yet a failure */
    int f = atomic_load_explicit(&w->failed, memory_order_acquire);
    if (f == 1) return nc_fail(err, NC_ERR_IO, "%s", w->msg);
    return NC_OK;
}
