/* "key=value" option arrays (api_options.h). */
#include "api/api_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t key_len(const char *opt) {
    const char *eq = strchr(opt, '=');
    return eq ? (size_t)(eq - opt) : 0;
}

nc_status api_opt_check(const char *const *options, const char *const *known, const char *what,
                        nc_error *err) {
    for (size_t i = 0; options && options[i]; i++) {
        size_t n = key_len(options[i]);
        if (n == 0)
            return nc_fail(err, NC_ERR_INVALID, "%s: option '%s' is not key=value", what,
                           options[i]);
        int ok = 0;
        for (size_t k = 0; known[k] && !ok; k++)
            ok = strlen(known[k]) == n && !strncmp(known[k], options[i], n);
        if (!ok)
            return nc_fail(err, NC_ERR_INVALID, "%s: unknown option '%.*s'", what, (int)n,
                           options[i]);
    }
    return NC_OK;
}

const char *api_opt_get(const char *const *options, const char *key) {
    const char *v = NULL;
    size_t n = strlen(key);
    for (size_t i = 0; options && options[i]; i++)
        if (key_len(options[i]) == n && !strncmp(options[i], key, n)) v = options[i] + n + 1;
    return v;
}

nc_status api_opt_int(const char *const *options, const char *key, int lo, int hi, int *out,
                      const char *what, nc_error *err) {
    const char *v = api_opt_get(options, key);
    if (!v) return NC_OK;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return nc_fail(err, NC_ERR_INVALID, "%s: option %s=%s is not an integer in [%d, %d]", what,
                       key, v, lo, hi);
    *out = (int)x;
    return NC_OK;
}
