/* A quick memory read-bandwidth probe: the denominator of the decoding
 * roofline (weight bytes read per token / bandwidth = the floor on time per
 * generated token) that `nectar bench` prints beside its measurements. */
#ifndef NC_CPU_MEMBW_H
#define NC_CPU_MEMBW_H

#include <stddef.h>

#include "base/pool.h"

/* Best of `reps` timed passes reading a buffer of size_bytes (much larger
 * than the caches: the L3 here is 480 MiB, so 2 GiB) split across the
 * pool's threads; bytes/s, or 0 if the buffer cannot be allocated. each
 * (may be NULL) gets every pass's bytes/s; per_cpu_s (may be NULL) the best
 * bytes per second of CPU time the reading threads got (what one running
 * thread streams, whatever else shares the machine). */
double cpu_read_bandwidth(nc_pool *pool, size_t size_bytes, int reps, double *each,
                          double *per_cpu_s);

#define CPU_MEMBW_DEFAULT_BYTES ((size_t)2 << 30)

#endif
