/* The "key=value" option arrays of the public API (include/nectar.h): one
 * check that every key is known and well-formed, and typed lookups that
 * name the key and value in their errors. */
#ifndef NC_API_OPTIONS_H
#define NC_API_OPTIONS_H

#include "base/error.h"

/* Every entry of options (NULL-terminated; NULL itself is fine) is
 * "key=value" with key in known (NULL-terminated). `what` names the call in
 * messages ("nc_model_open"). */
nc_status api_opt_check(const char *const *options, const char *const *known, const char *what,
                        nc_error *err);

/* The value of key (the last one given), or NULL. */
const char *api_opt_get(const char *const *options, const char *key);

/* An integer option in [lo, hi]; *out keeps its value when key is absent. */
nc_status api_opt_int(const char *const *options, const char *key, int lo, int hi, int *out,
                      const char *what, nc_error *err);

#endif
