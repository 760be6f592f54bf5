/* nc_sampling: the sampler parameters and stop strings of nc_generate,
 * set by name so the public API exposes no struct layout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_sampling.h"

NC_API nc_sampling *nc_sampling_new(void) {
    nc_sampling *s = calloc(1, sizeof *s);
    if (s) s->params = gen_sampler_defaults_greedy();
    return s;
}

NC_API void nc_sampling_free(nc_sampling *s) {
    if (!s) return;
    for (int i = 0; i < s->n_stops; i++)
        free(s->stops[i]);
    free(s);
}

NC_API nc_status nc_sampling_set(nc_sampling *s, const char *name, double value, nc_error *err) {
    if (!s || !name) return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: NULL argument");
    gen_sampler_params p = s->params;
    if (!isfinite(value))
        return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: %s = %g is not finite", name, value);
    int unit = !strcmp(name, "top_p") || !strcmp(name, "min_p");
    if ((!strcmp(name, "temperature") && value < 0) || (unit && (value < 0 || value > 1)) ||
        (!strcmp(name, "repeat_penalty") && value <= 0))
        return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: %s = %g is out of range", name,
                       value);
    if (!strcmp(name, "temperature"))
        p.temperature = (float)value;
    else if (!strcmp(name, "top_k")) {
        if (value < 0 || value > 1e9 || value != floor(value))
            return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: top_k = %g is not a count",
                           value);
        p.top_k = (int)value;
    } else if (!strcmp(name, "top_p"))
        p.top_p = (float)value;
    else if (!strcmp(name, "min_p"))
        p.min_p = (float)value;
    else if (!strcmp(name, "repeat_penalty"))
        p.repeat_penalty = (float)value;
    else if (!strcmp(name, "seed")) {
        if (value < 0 || value > 18446744073709549568.0 || value != floor(value))
            return nc_fail(err, NC_ERR_INVALID,
                           "nc_sampling_set: seed = %g is not a non-negative "
                           "integer",
                           value);
        p.seed = (uint64_t)value;
    } else
        return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: unknown parameter '%s'", name);
    NC_TRY(gen_sampler_check_params(&p, err));
    s->params = p;
    return NC_OK;
}

NC_API nc_status nc_sampling_add_stop(nc_sampling *s, const char *stop, nc_error *err) {
    if (!s || !stop) return nc_fail(err, NC_ERR_INVALID, "nc_sampling_add_stop: NULL argument");
    if (!*stop) return nc_fail(err, NC_ERR_INVALID, "nc_sampling_add_stop: empty stop string");
    if (s->n_stops == API_MAX_STOPS)
        return nc_fail(err, NC_ERR_RANGE, "nc_sampling_add_stop: at most %d stop strings",
                       API_MAX_STOPS);
    if (!(s->stops[s->n_stops] = strdup(stop)))
        return nc_fail(err, NC_ERR_NOMEM, "nc_sampling_add_stop: out of memory");
    s->n_stops++;
    return NC_OK;
}
