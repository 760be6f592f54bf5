/* Strict strtod/strtoll wrappers: no trailing junk, no silent overflow. */
#include "bench/numarg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

nc_status nc_parse_double(const char *s, const char *what, int allow_inf, double *out,
                          nc_error *err) {
    if (!s || !*s) return nc_fail(err, NC_ERR_INVALID, "%s: expected a number", what);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || end == s || errno == ERANGE || isnan(v) || (isinf(v) && !allow_inf))
        return nc_fail(err, NC_ERR_INVALID, "%s: '%s' is not a finite number", what, s);
    *out = v;
    return NC_OK;
}

nc_status nc_parse_int64(const char *s, const char *what, int64_t lo, int64_t hi, int64_t *out,
                         nc_error *err) {
    if (!s || !*s) return nc_fail(err, NC_ERR_INVALID, "%s: expected an integer", what);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || end == s || errno == ERANGE)
        return nc_fail(err, NC_ERR_INVALID, "%s: '%s' is not an integer", what, s);
    if (v < lo || v > hi)
        return nc_fail(err, NC_ERR_RANGE, "%s: %lld is outside %lld..%lld", what, v, (long long)lo,
                       (long long)hi);
    *out = (int64_t)v;
    return NC_OK;
}
