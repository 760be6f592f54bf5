/* Error records: formatting one-line messages and adding context. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void strip_newlines(char *s) {
    for (; *s; s++)
        if (*s == '\n' || *s == '\r') *s = ' ';
}

nc_status nc_fail(nc_error *err, nc_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        strip_newlines(err->msg);
        err->code = code;
    }
    return code;
}

nc_status nc_fail_prefix(nc_error *err, const char *fmt, ...) {
    if (!err) return NC_ERR_INTERNAL;
    char prefix[256], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
    strip_newlines(err->msg);
    return err->code;
}

void nc_error_clear(nc_error *err) {
    if (!err) return;
    err->code = NC_OK;
    err->msg[0] = '\0';
}

const char *nc_status_name(nc_status s) {
    static const char *names[] = {"ok",          "io",    "format",    "nomem",   "invalid",
                                  "unsupported", "range", "not-found", "internal"};
    if ((unsigned)s < sizeof names / sizeof names[0]) return names[s];
    return "unknown";
}
