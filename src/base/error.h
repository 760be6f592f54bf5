/* The one error mechanism: functions that can fail return an nc_status and
 * describe the failure in a caller-provided nc_error (which may be NULL).
 * Messages are a single line naming what is at fault (file, field, tensor). */
#ifndef NC_BASE_ERROR_H
#define NC_BASE_ERROR_H

#include "nectar.h"

#if defined(__GNUC__) || defined(__clang__)
#define NC_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define NC_PRINTF(fmt_idx, arg_idx)
#endif

/* Sets err (if non-NULL) and returns code, so callers can write
 * `return nc_fail(err, NC_ERR_FORMAT, "%s: bad header", path);` */
nc_status nc_fail(nc_error *err, nc_status code, const char *fmt, ...) NC_PRINTF(3, 4);

/* Prepends "prefix: " to an existing message (adds context on the way up). */
nc_status nc_fail_prefix(nc_error *err, const char *fmt, ...) NC_PRINTF(2, 3);

/* Clears an error record to NC_OK with an empty message. */
void nc_error_clear(nc_error *err);

/* Propagates a failing status: `NC_TRY(st_open(...));` */
#define NC_TRY(expr)                                                                               \
    do {                                                                                           \
        nc_status nc_try_st_ = (expr);                                                             \
        if (nc_try_st_ != NC_OK) return nc_try_st_;                                                \
    } while (0)

#endif
