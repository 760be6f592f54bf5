/* Monotonic wall-clock time, and the process's and the system's memory,
 * for load times, tokens/s, the measurement harness and the weights'
 * residency (io/weights_residency.h). */
#ifndef NC_BASE_TIMER_H
#define NC_BASE_TIMER_H

#include <stddef.h>

double nc_now_s(void); /* monotonic seconds */
/* CPU seconds of this process, all its threads: against the wall time, the
 * share of the cores it got (shared machines); 0 if the system cannot say. */
double nc_process_cpu_s(void);
size_t nc_peak_rss_bytes(void);    /* peak resident set size of this process */
size_t nc_current_rss_bytes(void); /* resident now; 0 where the system does not say (Linux only) */
/* Memory the system could give this process now without swapping (Linux:
 * MemAvailable); elsewhere the physical memory's size; 0 if unknown. */
size_t nc_available_memory_bytes(void);

#endif
