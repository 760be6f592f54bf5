/* Clocks and resource usage. */
#include "base/timer.h"

#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double nc_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double nc_process_cpu_s(void) {
    struct timespec ts;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0
               ? (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9
               : 0.0;
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

size_t nc_current_rss_bytes(void) {
#if defined(__linux__)
    /* statm: total and resident pages */
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long total = 0, resident = 0;
    int ok = f && fscanf(f, "%lu %lu", &total, &resident) == 2;
    if (f) fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return ok && page > 0 ? (size_t)resident * (size_t)page : 0;
#else
    return 0;
#endif
}

size_t nc_available_memory_bytes(void) {
#if defined(__linux__)
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lu kB", &kib) == 1) break;
    if (f) fclose(f);
    if (kib) return (size_t)kib * 1024;
#endif
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}
