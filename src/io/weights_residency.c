/* The NECTAR_WEIGHTS policy (see weights_residency.h). */
#include "io/weights_residency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/* MemAvailable from /proc/meminfo in bytes; 0 where there is none. */
static size_t available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
    fclose(f);
    return (size_t)kib * 1024;
}

nc_status weights_residency_choose(size_t total_bytes, weights_residency *out, nc_error *err) {
    const char *env = getenv("NECTAR_WEIGHTS");
    out->resident = 0;
    if (env && !strcmp(env, "mmap")) {
        out->why = "mmapped (NECTAR_WEIGHTS=mmap)";
        return NC_OK;
    }
    if (env && !strcmp(env, "resident")) {
        out->resident = 1;
        out->why = "read into memory (NECTAR_WEIGHTS=resident)";
        return NC_OK;
    }
    if (env && *env && strcmp(env, "auto"))
        return nc_fail(err, NC_ERR_INVALID,
                       "NECTAR_WEIGHTS: '%s' is not one of mmap, resident, auto", env);
    if (!nc_huge_pages_available()) {
        out->why = "mmapped (auto: no huge pages on this system)";
        return NC_OK;
    }
    size_t avail = available_bytes();
    if (total_bytes > avail / 2) {
        out->why = "mmapped (auto: more than half of the available memory)";
        return NC_OK;
    }
    out->resident = 1;
    out->why = "read into memory on huge pages (auto)";
    return NC_OK;
}
