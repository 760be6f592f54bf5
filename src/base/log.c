/* stderr logging with a process-wide level (NECTAR_LOG=debug|info|warn|error|quiet). */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int level_set;
static nc_log_level current = NC_LOG_INFO;

static nc_log_level level_from_env(void) {
    const char *e = getenv("NECTAR_LOG");
    if (!e) return NC_LOG_INFO;
    static const char *names[] = {"debug", "info", "warn", "error", "quiet"};
    for (int i = 0; i < 5; i++)
        if (strcmp(e, names[i]) == 0) return (nc_log_level)i;
    return NC_LOG_INFO;
}

void nc_log_set_level(nc_log_level level) {
    current = level;
    level_set = 1;
}

nc_log_level nc_log_get_level(void) {
    if (!level_set) {
        current = level_from_env();
        level_set = 1;
    }
    return current;
}

void nc_log(nc_log_level level, const char *fmt, ...) {
    if (level < nc_log_get_level()) return;
    static const char *tags[] = {"debug", "info", "warning", "error", ""};
    fprintf(stderr, "nectar: %s: ", tags[level]);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
