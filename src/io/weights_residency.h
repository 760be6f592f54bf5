/* Where a model's weights live while it runs: in the mmapped files (the
 * page cache, shared between processes, nothing copied) or read into the
 * process's own memory on huge pages with every tensor's data block 64-byte
 * aligned (st_make_resident). Decoding streams every weight once per token,
 * and on the Zen 5 VM this was measured on the resident copy streamed
 * 1.12-1.6x faster (docs/performance.md, "Weights in memory"); the price is
 * the copy at load (about 0.25 s per GB from the page cache) and memory the
 * page cache cannot reclaim.
 *
 * NECTAR_WEIGHTS=mmap | resident | auto (default): auto reads the weights
 * into memory when the system grants huge pages and they take at most half
 * of the available memory, and maps them otherwise. */
#ifndef NC_IO_WEIGHTS_RESIDENCY_H
#define NC_IO_WEIGHTS_RESIDENCY_H

#include <stddef.h>

#include "base/error.h"

typedef struct weights_residency {
    int resident;    /* 1: read into memory; 0: mmapped */
    const char *why; /* static text saying where and why, for bench and the log */
} weights_residency;

/* From NECTAR_WEIGHTS and the machine, for total_bytes of weights; an
 * unknown NECTAR_WEIGHTS value is an error naming it. */
nc_status weights_residency_choose(size_t total_bytes, weights_residency *out, nc_error *err);

#endif
