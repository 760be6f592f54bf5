/* The NECTAR_WEIGHTS policy (see weights_residency.h). */
#include "io/weights_residency.h"

#include <string.h>

#include "base/alloc.h"
#include "base/timer.h"

typedef enum { MODE_AUTO, MODE_MMAP, MODE_RESIDENT } residency_mode;
static residency_mode mode = MODE_AUTO;

nc_status weights_residency_select(const char *name, nc_error *err) {
    if (!name || !strcmp(name, "auto"))
        mode = MODE_AUTO;
    else if (!strcmp(name, "mmap"))
        mode = MODE_MMAP;
    else if (!strcmp(name, "resident"))
        mode = MODE_RESIDENT;
    else
        return nc_fail(err, NC_ERR_INVALID, "weights: '%s' is not one of mmap, resident, auto",
                       name);
    return NC_OK;
}

void weights_residency_choose(size_t total_bytes, weights_residency *out) {
    out->resident = 0;
    out->drop_page_cache = 0;
    if (mode == MODE_MMAP) {
        out->why = "mmapped (as set: mmap)";
        return;
    }
    size_t avail = nc_available_memory_bytes();
    /* A model of more than half the memory would otherwise sit there
     * twice while it loads: the copy, and the file in the page cache. */
    int drop = total_bytes > avail / 2;
    if (mode == MODE_RESIDENT) {
        out->resident = 1;
        out->drop_page_cache = drop;
        out->why = "read into memory (as set: resident)";
        return;
    }
    if (!nc_huge_pages_available()) {
        out->why = "mmapped (auto: no huge pages on this system)";
        return;
    }
    if (total_bytes > avail / 4 * 3) {
        out->why = "mmapped (auto: more than 3/4 of the available memory)";
        return;
    }
    out->resident = 1;
    out->drop_page_cache = drop;
    out->why = out->drop_page_cache
                   ? "read into memory on huge pages (auto; the file's page cache dropped as read)"
                   : "read into memory on huge pages (auto)";
}
