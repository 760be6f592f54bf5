/* Inside the public API: the CPU's kernels chosen by measurement. */
#ifndef NC_API_WISDOM_H
#define NC_API_WISDOM_H

#include "base/error.h"

/* cpu_tune_once (cpu_wisdom.h) on `threads` threads with the wisdom file
 * the command line would use: NECTAR_WISDOM ("off": none), else
 * $XDG_CACHE_HOME/nectar/wisdom or ~/.cache/nectar/wisdom. The first CPU
 * model opened on a machine measures (~1 s) and writes the file; later
 * opens read it; within a process only the first call does anything. A
 * path that does not fit (cpu_wisdom_path) fails in one line naming the
 * variable, so nc_model_open does. */
nc_status api_tune_cpu_kernels(int threads, nc_error *err);

#endif
