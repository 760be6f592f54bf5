/* stderr logging with a process-wide level (info unless set; the command
 * line sets it from NECTAR_LOG=debug|info|warn|error|quiet). */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nc_log_level current = NC_LOG_INFO;

void nc_log_set_level(nc_log_level level) {
    current = level;
}

nc_log_level nc_log_get_level(void) {
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
