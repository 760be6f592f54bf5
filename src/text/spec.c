/* The pipeline component walker (spec.h). */
#include "text/spec.h"

#include <string.h>

static nc_status walk(const json_t *spec, const char *kind, const char *list_key,
                      tok_spec_leaf_fn leaf, void *ctx, const char *what, int depth,
                      nc_error *err) {
    if (!spec || json_is_null(spec)) return NC_OK;
    if (!json_is_object(spec) || depth > 4)
        return nc_fail(err, NC_ERR_FORMAT, "%s: %s must be an object", what, kind);
    const char *type;
    NC_TRY(nc_json_str(spec, "type", &type, 1, what, err));
    if (strcmp(type, "Sequence")) return leaf(ctx, spec, type, what, err);
    const json_t *list = json_object_get(spec, list_key);
    if (!json_is_array(list))
        return nc_fail(err, NC_ERR_FORMAT, "%s: %s Sequence needs a '%s' array", what, kind,
                       list_key);
    for (size_t i = 0; i < json_array_size(list); i++)
        NC_TRY(walk(json_array_get(list, i), kind, list_key, leaf, ctx, what, depth + 1, err));
    return NC_OK;
}

nc_status tok_spec_walk(const json_t *spec, const char *kind, const char *list_key,
                        tok_spec_leaf_fn leaf, void *ctx, const char *what, nc_error *err) {
    return walk(spec, kind, list_key, leaf, ctx, what, 0, err);
}
