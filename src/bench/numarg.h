/* Strict number parsing for the bench commands' options and for the
 * line-oriented files they read: the whole string must be a finite number,
 * and the error names the option or field. */
#ifndef NC_BENCH_NUMARG_H
#define NC_BENCH_NUMARG_H

#include <stdint.h>

#include "base/error.h"

/* Accepts "inf" only when allow_inf is set (e.g. an Amdahl speedup). */
nc_status nc_parse_double(const char *s, const char *what, int allow_inf, double *out,
                          nc_error *err);
/* Decimal integer in [lo, hi]. */
nc_status nc_parse_int64(const char *s, const char *what, int64_t lo, int64_t hi, int64_t *out,
                         nc_error *err);

#endif
