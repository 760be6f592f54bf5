/* Clocks and resource usage. */
#include "base/timer.h"

#include <sys/resource.h>
#include <time.h>

double nc_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t nc_peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
#ifdef __APPLE__
    return (size_t)ru.ru_maxrss; /* bytes on Darwin */
#else
    return (size_t)ru.ru_maxrss * 1024; /* KiB on Linux */
#endif
}
