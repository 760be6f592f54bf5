/* A stand-in Neural Engine for machines without one: the ane_device
 * interface backed by the MIL interpreter in fp16 mode. It behaves like
 * the ANE where the host can get it wrong: it describes itself only
 * through modelAttributes JSON in the reference's layout, with input and
 * output symbols sorted in reverse name order and procedure ids in reverse
 * declaration order (so binding by declaration order fails); it reads
 * inputs from and writes outputs into 64-byte-row surfaces; it rejects a
 * request that binds an unknown symbol, misses one, passes a surface too
 * small, uses one surface as both input and output, or runs while the
 * host holds a surface lock; and submit runs requests in order on its own thread and completes
 * them through the callback, as the ANE's completion handlers do. */
#ifndef NC_ANE_HOST_ANE_FAKE_H
#define NC_ANE_HOST_ANE_FAKE_H

#include "ane_host/ane_device.h"

nc_status ane_fake_new(ane_device *out, nc_error *err);
void ane_fake_free(ane_device *d);

/* Makes the n-th evaluation from now fail (0: never): error paths. */
void ane_fake_fail_at(ane_device *d, int n);
/* Evaluations run so far. */
long ane_fake_evaluations(const ane_device *d);

#endif
