/* manifest.json's "palettize" object (palettize_manifest.h). The names
 * follow coremltools' OpPalettizerConfig (nbits, granularity
 * per_tensor / per_grouped_channel, group_size) so a reader who knows
 * Apple's tools knows the fields. */
#include "bundle/palettize_manifest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/bundle_io.h"

static const char *granularity(int64_t group_size) {
    return group_size == 0 ? "per_tensor" : group_size == 1 ? "per_channel" : "per_grouped_channel";
}

json_t *lower_palette_to_json(const lower_palette_options *o) {
    if (!o->bits) return NULL;
    json_t *p = json_object(), *km = json_object();
    json_object_set_new(p, "bits", json_integer(o->bits));
    json_object_set_new(p, "index_dtype",
                        json_string(mil_dtype_name(lower_palette_index_dtype(o->bits))));
    json_object_set_new(p, "table_dtype", json_string("fp16"));
    json_object_set_new(p, "granularity", json_string(granularity(o->group_size)));
    json_object_set_new(p, "group_size", json_integer(o->group_size));
    json_object_set_new(p, "group_note",
                        json_string("output channels per table; where it does not divide a "
                                    "tensor's rows, the largest divisor below it"));
    json_object_set_new(km, "init", json_string("k-means++"));
    json_object_set_new(km, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(km, "max_iterations", json_integer(LOWER_PALETTE_MAX_STEPS));
    json_object_set_new(p, "kmeans", km);
    json_object_set_new(p, "zero_entry",
                        json_string("zero-padded tensors keep an exact 0.0 entry in every group "
                                    "that holds a 0.0"));
    json_object_set_new(p, "op", json_string("constexpr_lut_to_dense (iOS18)"));
    return p;
}

/* Integer member `key` of o in [lo, hi], named "palettize.<path>" on error. */
static nc_status int_in(const json_t *o, const char *key, const char *path, int64_t lo, int64_t hi,
                        int64_t *out, const char *what, nc_error *err) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return nc_fail(err, NC_ERR_FORMAT, "%s: palettize.%s must be an integer in [%lld, %lld]",
                       what, path, (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return NC_OK;
}

static nc_status str_is(const json_t *o, const char *key, const char *path, const char *want,
                        const char *what, nc_error *err) {
    const char *s = json_string_value(json_object_get(o, key));
    if (!s || strcmp(s, want))
        return nc_fail(err, NC_ERR_FORMAT, "%s: palettize.%s must be \"%s\"", what, path, want);
    return NC_OK;
}

nc_status lower_palette_from_json(const json_t *root, lower_palette_options *o, const char *what,
                                  nc_error *err) {
    memset(o, 0, sizeof *o);
    const json_t *p = json_object_get(root, "palettize");
    if (!p || json_is_null(p)) return NC_OK;
    if (!json_is_object(p))
        return nc_fail(err, NC_ERR_FORMAT, "%s: palettize is not an object", what);
    int64_t bits = 0, g = 0, seed = 0, steps = 0;
    NC_TRY(int_in(p, "bits", "bits", 1, 8, &bits, what, err));
    if (lower_palette_index_dtype((int)bits) == MIL_DT_INVALID)
        return nc_fail(err, NC_ERR_FORMAT, "%s: palettize.bits %lld is not 1, 2, 4, 6 or 8", what,
                       (long long)bits);
    NC_TRY(str_is(p, "index_dtype", "index_dtype",
                  mil_dtype_name(lower_palette_index_dtype((int)bits)), what, err));
    NC_TRY(str_is(p, "table_dtype", "table_dtype", "fp16", what, err));
    NC_TRY(int_in(p, "group_size", "group_size", 0, 1 << 30, &g, what, err));
    NC_TRY(str_is(p, "granularity", "granularity", granularity(g), what, err));
    const json_t *km = json_object_get(p, "kmeans");
    if (!json_is_object(km))
        return nc_fail(err, NC_ERR_FORMAT, "%s: palettize.kmeans is not an object", what);
    NC_TRY(str_is(km, "init", "kmeans.init", "k-means++", what, err));
    NC_TRY(int_in(km, "seed", "kmeans.seed", 0, INT64_MAX, &seed, what, err));
    NC_TRY(int_in(km, "max_iterations", "kmeans.max_iterations", 1, 1 << 30, &steps, what, err));
    o->bits = (int)bits;
    o->group_size = g;
    o->seed = (uint64_t)seed;
    return NC_OK;
}

void lower_palette_describe(const lower_palette_options *o, char *buf, size_t cap) {
    if (!o->bits) {
        snprintf(buf, cap, "fp16 weights (not palettized)");
        return;
    }
    char g[64];
    if (o->group_size == 0)
        snprintf(g, sizeof g, "one table per tensor");
    else if (o->group_size == 1)
        snprintf(g, sizeof g, "one table per output channel");
    else
        snprintf(g, sizeof g, "tables per %lld output channels", (long long)o->group_size);
    snprintf(buf, cap,
             "%d bits (%s indices, fp16 tables), %s, k-means++ seed %llu, at most %d "
             "Lloyd steps",
             o->bits, mil_dtype_name(lower_palette_index_dtype(o->bits)), g,
             (unsigned long long)o->seed, LOWER_PALETTE_MAX_STEPS);
}

nc_status lower_bundle_palettize(const char *bundle_dir, lower_palette_options *o, nc_error *err) {
    char path[4200], *text = NULL;
    size_t len = 0;
    json_t *root = NULL;
    NC_TRY(lower_manifest_text(bundle_dir, path, sizeof path, &text, &len, err));
    nc_status st = nc_json_parse(text, len, path, &root, err);
    free(text);
    if (st == NC_OK) st = lower_palette_from_json(root, o, path, err);
    json_decref(root);
    return st;
}
