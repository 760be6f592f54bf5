/* Where a model's weights live while it runs: in the mmapped files (the
 * page cache, shared between processes, nothing copied) or read into the
 * process's own memory on huge pages with every tensor's data block 64-byte
 * aligned (st_make_resident). Decoding streams every weight once per token,
 * and on the Zen 5 VM this was measured on the resident copy streamed
 * 1.12-1.6x faster (docs/performance.md, "Weights in memory"); the price is
 * the copy at load (about 0.25 s per GB from the page cache) and memory the
 * page cache cannot reclaim.
 *
 * The mode is the process's (weights_residency_select; the command line
 * sets it from NECTAR_WEIGHTS): mmap | resident | auto (default): auto reads the weights
 * into memory when the system grants huge pages and they take at most 3/4
 * of the available memory (MemAvailable: free memory and the page cache the
 * kernel can drop), and maps them otherwise. A mapped model that runs needs
 * the same memory, in the page cache; what differs is only the load, when
 * the copy and the file's cached pages would coexist: beyond half of the
 * available memory the file's pages are dropped from the cache as read. */
#ifndef NC_IO_WEIGHTS_RESIDENCY_H
#define NC_IO_WEIGHTS_RESIDENCY_H

#include <stddef.h>

#include "base/error.h"

typedef struct weights_residency {
    int resident;        /* 1: read into memory; 0: mmapped */
    int drop_page_cache; /* resident: drop the file's pages from the page cache as read */
    const char *why; /* static text saying where and why, for bench and the log */
} weights_residency;

/* Sets the process's mode: "mmap", "resident", "auto" or NULL (auto); any
 * other value is NC_ERR_INVALID. Call before models open. */
nc_status weights_residency_select(const char *mode, nc_error *err);

/* The place of total_bytes of weights, by the mode and the machine. */
void weights_residency_choose(size_t total_bytes, weights_residency *out);

#endif
