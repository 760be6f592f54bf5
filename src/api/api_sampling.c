/* nc_sampling: the sampler parameters, stop strings and prompt policy of
 * nc_generate, set by name so the public API exposes no struct layout, or
 * from a model folder's generation_config.json. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_model.h"
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

/* A count: a whole number in [0, max]. */
static int is_count(double v, double max) {
    return v >= 0 && v <= max && v == floor(v);
}

NC_API nc_status nc_sampling_set(nc_sampling *s, const char *name, double value, nc_error *err) {
    if (!s || !name) return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: NULL argument");
    gen_sampler_params p = s->params;
    if (!isfinite(value))
        return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: %s = %g is not finite", name, value);
    int unit = !strcmp(name, "top_p") || !strcmp(name, "min_p");
    int penalty = !strcmp(name, "presence_penalty") || !strcmp(name, "frequency_penalty");
    if ((!strcmp(name, "temperature") && value < 0) || (unit && (value < 0 || value > 1)) ||
        (!strcmp(name, "repeat_penalty") && value <= 0) || (penalty && fabs(value) > 100) ||
        (!strcmp(name, "truncate") && value != 0 && value != 1))
        return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: %s = %g is out of range", name,
                       value);
    if (!strcmp(name, "temperature"))
        p.temperature = (float)value;
    else if (!strcmp(name, "top_k")) {
        if (!is_count(value, INT_MAX))
            return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: top_k = %g is not a count",
                           value);
        p.top_k = (int)value;
    } else if (!strcmp(name, "top_p"))
        p.top_p = (float)value;
    else if (!strcmp(name, "min_p"))
        p.min_p = (float)value;
    else if (!strcmp(name, "repeat_penalty"))
        p.repeat_penalty = (float)value;
    else if (!strcmp(name, "presence_penalty"))
        p.presence_penalty = (float)value;
    else if (!strcmp(name, "frequency_penalty"))
        p.frequency_penalty = (float)value;
    else if (!strcmp(name, "seed")) {
        /* above 2^53 a double skips integers: nc_sampling_set_seed takes any */
        if (!is_count(value, 9007199254740992.0))
            return nc_fail(err, NC_ERR_INVALID,
                           "nc_sampling_set: seed = %g is not an integer in [0, 2^53] "
                           "(nc_sampling_set_seed takes any)",
                           value);
        p.seed = (uint64_t)value;
    } else if (!strcmp(name, "truncate")) {
        s->truncate = value != 0;
        return NC_OK;
    } else
        return nc_fail(err, NC_ERR_INVALID, "nc_sampling_set: unknown parameter '%s'", name);
    NC_TRY(gen_sampler_check_params(&p, err));
    s->params = p;
    return NC_OK;
}

NC_API double nc_sampling_get(const nc_sampling *s, const char *name) {
    if (!s || !name) return NAN;
    const gen_sampler_params *p = &s->params;
    const struct {
        const char *name;
        double value;
    } v[] = {{"temperature", p->temperature},
             {"top_k", p->top_k},
             {"top_p", p->top_p},
             {"min_p", p->min_p},
             {"repeat_penalty", p->repeat_penalty},
             {"presence_penalty", p->presence_penalty},
             {"frequency_penalty", p->frequency_penalty},
             {"seed", (double)p->seed},
             {"truncate", s->truncate}};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (!strcmp(name, v[i].name)) return v[i].value;
    return NAN;
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
