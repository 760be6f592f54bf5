/* Finding the data folder (data_dir.h). The executable's own path is the
 * one platform-specific piece: /proc/self/exe on Linux,
 * _NSGetExecutablePath on macOS, none elsewhere. */
#include "data_dir.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef __APPLE__
#include <mach-o/dyld.h>
#include <stdint.h>
#endif

#include "base/mmap.h"

#ifndef NECTAR_DATADIR
#define NECTAR_DATADIR "/usr/local/share/nectar"
#endif

const char *nectar_exe_dir(char *out, size_t cap) {
    if (cap < 2) return NULL;
#if defined(__APPLE__)
    uint32_t n = (uint32_t)cap;
    if (_NSGetExecutablePath(out, &n) != 0) return NULL;
#elif defined(__linux__)
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0 || (size_t)n >= cap - 1) return NULL;
    out[n] = '\0';
#else
    return NULL;
#endif
    char *slash = strrchr(out, '/');
    if (!slash) return NULL;
    *slash = '\0';
    return out;
}

const char *nectar_data_dir(const char *name, char *out, size_t cap) {
    char exe[4096];
    const char *dir = nectar_exe_dir(exe, sizeof exe);
    /* installed: BIN/../share/nectar; the compiled-in DATADIR; a build tree
     * (build/nectar, build/asan/nectar): the repository's fixtures */
    const char *const rel[] = {"%s/../share/nectar/%s", NULL, "%s/../tests/fixtures/%s",
                               "%s/../../tests/fixtures/%s"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        if (rel[i] && !dir) continue;
        if (rel[i])
            snprintf(out, cap, rel[i], dir, name);
        else
            snprintf(out, cap, "%s/%s", NECTAR_DATADIR, name);
        if (nc_is_dir(out)) return out;
    }
    return NULL;
}
