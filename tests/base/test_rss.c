/* Resident memory (base/timer.h): touching 64 MiB raises the current and
 * the peak figure by about that much; freeing it lowers the current one,
 * not the peak. bench subtracts its probe's buffers with these, and sizes
 * them by the memory available. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test.h"
#include "base/timer.h"

#define MIB ((size_t)1 << 20)

static void test_touching_memory_shows_in_rss(void) {
    size_t bytes = 64 * MIB;
    size_t before = nc_current_rss_bytes();
#if !defined(__linux__)
    CHECK(before == 0); /* not known there: callers fall back to the peak */
    SKIP("the current RSS is read on Linux only");
#endif
    CHECK(before > 0);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 1, bytes);
    size_t during = nc_current_rss_bytes(), peak = nc_peak_rss_bytes();
    munmap(p, bytes);
    size_t after = nc_current_rss_bytes();
    CHECKF(during >= before + bytes - 4 * MIB, "before %zu, during %zu", before, during);
    CHECKF(peak >= during - 4 * MIB, "peak %zu, during %zu", peak, during);
    CHECKF(after + bytes - 4 * MIB <= during, "during %zu, after %zu", during, after);
    CHECK(nc_peak_rss_bytes() >= peak);
}

/* The memory bench sizes its probe by: known here, and no more than the
 * machine has. */
static void test_available_memory_is_within_the_machine(void) {
    size_t avail = nc_available_memory_bytes();
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    CHECK(pages > 0 && page > 0);
    CHECKF(avail > 0 && avail <= (size_t)pages * (size_t)page, "available %zu of %ld pages", avail,
           pages);
}

int main(void) {
    RUN(test_touching_memory_shows_in_rss);
    RUN(test_available_memory_is_within_the_machine);
    return nc_test_exit_code();
}
