/* nc_sampling: the sampler parameters, stop strings and prompt policy of
 * nc_generate, set by name so the public API exposes no struct layout, or
 * from a model folder's generation_config.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_model.h"
#include "api/api_sampling.h"
#include "gen/sampling_params.h"

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

/* The parameters the sampler table does not hold: the seed and the prompt
 * policy. */
static int is_seed_ok(double v) {
    /* above 2^53 a double skips integers: nc_sampling_set_seed takes any */
    return v >= 0 && v <= 9007199254740992.0 && v == floor(v);
}

NC_API nc_status nc_sampling_set(nc_sampling *s, const char *name, double value, nc_error *err) {
    if (!s || !name) return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: NULL argument");
    if (!isfinite(value))
        return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: %s: %g is not finite", name, value);
    if (!strcmp(name, "truncate")) {
        if (value != 0 && value != 1)
            return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: truncate: %g is not 0 or 1",
                           value);
        s->truncate = value != 0;
        return NC_OK;
    }
    if (!strcmp(name, "seed")) {
        if (!is_seed_ok(value))
            return nc_fail(err, NC_ERR_INVALID,
                           "nc_sampling_set: seed: %g is not an integer in [0, 2^53] "
                           "(nc_sampling_set_seed takes any)",
                           value);
        s->params.seed = (uint64_t)value;
        return NC_OK;
    }
    const gen_param *r = gen_param_named(name);
    if (!r) return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: unknown parameter '%s'", name);
    char what[64];
    snprintf(what, sizeof what, "nc_sampling_set: %s", name);
    NC_TRY(gen_param_check(r, value, what, err));
    gen_sampler_params p = s->params;
    gen_param_put(&p, r, value);
    NC_TRY(gen_sampler_check_params(&p, err));
    s->params = p;
    return NC_OK;
}

NC_API double nc_sampling_get(const nc_sampling *s, const char *name) {
    if (!s || !name) return NAN;
    if (!strcmp(name, "seed")) return (double)s->params.seed;
    if (!strcmp(name, "truncate")) return s->truncate;
    const gen_param *r = gen_param_named(name);
    return r ? gen_param_get(&s->params, r) : NAN;
}

NC_API void nc_sampling_set_seed(nc_sampling *s, uint64_t seed) {
    if (s) s->params.seed = seed;
}

NC_API nc_status nc_sampling_from_model(nc_sampling *s, const nc_model *m, nc_error *err) {
    if (!s || !m) return nc_fail(err, NC_ERR_INVALID, "nc_sampling_from_model: NULL argument");
    if (m->kind != NC_MODEL_DECODER)
        return nc_fail(err, NC_ERR_INVALID,
                       "%s is an encoder: it has no sampling defaults (generation needs a "
                       "decoder)",
                       m->dir);
    return gen_sampling_from_folder(m->dir, 0, &s->params, err);
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
