/* The config.json fields both decoder families share (hf_config.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/hf_config.h"

#include "base/json.h"

static void add_eos(int32_t *ids, int *n, int cap, int64_t id) {
    for (int i = 0; i < *n; i++)
        if (ids[i] == id) return;
    if (*n < cap) ids[(*n)++] = (int32_t)id;
}

nc_status hf_config_read_eos(const json_t *o, int64_t vocab, int32_t *ids, int *n, int cap,
                             const char *what, nc_error *err) {
    const json_t *v = json_object_get(o, "eos_token_id");
    if (!v || json_is_null(v)) return NC_OK;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0 || json_integer_value(v) >= vocab)
            return nc_fail(err, NC_ERR_RANGE, "%s: eos_token_id %lld is outside the vocabulary",
                           what, (long long)json_integer_value(v));
        add_eos(ids, n, cap, json_integer_value(v));
        return NC_OK;
    }
    if (!json_is_array(v))
        return nc_fail(err, NC_ERR_FORMAT, "%s: field 'eos_token_id' must be an int or a list",
                       what);
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= vocab)
            return nc_fail(err, NC_ERR_FORMAT, "%s: eos_token_id[%zu] is not a token id", what, i);
        add_eos(ids, n, cap, json_integer_value(e));
    }
    return NC_OK;
}

nc_status hf_config_read_rope(const json_t *o, double *theta, double *partial, const char *what,
                              nc_error *err) {
    NC_TRY(nc_json_num(o, "rope_theta", theta, 0, what, err));
    if (partial) NC_TRY(nc_json_num(o, "partial_rotary_factor", partial, 0, what, err));
    const json_t *rp = json_object_get(o, "rope_parameters");
    if (rp && !json_is_null(rp)) {
        char sub[600];
        snprintf(sub, sizeof sub, "%s: rope_parameters", what);
        const char *type = "default";
        NC_TRY(nc_json_num(rp, "rope_theta", theta, 0, sub, err));
        if (partial) NC_TRY(nc_json_num(rp, "partial_rotary_factor", partial, 0, sub, err));
        NC_TRY(nc_json_str(rp, "rope_type", &type, 0, sub, err));
        if (strcmp(type, "default"))
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: rope_type '%s' is not supported", sub,
                           type);
    }
    const json_t *rs = json_object_get(o, "rope_scaling");
    if (rs && !json_is_null(rs)) {
        const char *type = "default";
        NC_TRY(nc_json_str(rs, "rope_type", &type, 0, what, err));
        if (strcmp(type, "default"))
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: rope_scaling '%s' is not supported", what,
                           type);
    }
    if (!(*theta > 1.0) || !isfinite(*theta))
        return nc_fail(err, NC_ERR_RANGE, "%s: rope_theta %g must be a finite number > 1", what,
                       *theta);
    return NC_OK;
}
