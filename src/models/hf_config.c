/* The config.json fields both decoder families share (hf_config.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/hf_config.h"

#include "base/json.h"
#include "base/mmap.h"
#include "io/hf_weights.h"

static void add_eos(int32_t *ids, int *n, int cap, int64_t id) {
    for (int i = 0; i < *n; i++)
        if (ids[i] == id) return;
    if (*n < cap) ids[(*n)++] = (int32_t)id;
}

nc_status hf_config_check_type(const json_t *o, const char *type, const char *what, nc_error *err) {
    const char *got = NULL;
    NC_TRY(nc_json_str(o, "model_type", &got, 1, what, err));
    if (strcmp(got, type))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: model_type '%s' is not supported (this reader takes '%s')", what, got,
                       type);
    const char *act = "silu";
    NC_TRY(nc_json_str(o, "hidden_act", &act, 0, what, err));
    if (strcmp(act, "silu"))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: hidden_act '%s' is not supported (silu)", what,
                       act);
    return NC_OK;
}

nc_status hf_config_read_heads(const json_t *o, int *heads, int *kv_heads, const char *what,
                               nc_error *err) {
    NC_TRY(nc_json_int_in(o, "num_attention_heads", heads, 1, 1, 4096, what, err));
    *kv_heads = *heads;
    NC_TRY(nc_json_int_in(o, "num_key_value_heads", kv_heads, 0, 1, 4096, what, err));
    if (*heads % *kv_heads)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d",
                       what, *heads, *kv_heads);
    return NC_OK;
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

/* Llama 3's four fields of a rope_scaling / rope_parameters object. */
static nc_status read_llama3(const json_t *o, rope_scaling *s, const char *what, nc_error *err) {
    double factor = 0, lo = 0, hi = 0;
    int orig = 0;
    NC_TRY(nc_json_num(o, "factor", &factor, 1, what, err));
    NC_TRY(nc_json_num(o, "low_freq_factor", &lo, 1, what, err));
    NC_TRY(nc_json_num(o, "high_freq_factor", &hi, 1, what, err));
    NC_TRY(nc_json_int_in(o, "original_max_position_embeddings", &orig, 1, 1, 1 << 24, what, err));
    if (!(factor >= 1 && factor < 1e6) || !(lo > 0) || !(hi > lo) || !isfinite(hi))
        return nc_fail(err, NC_ERR_RANGE,
                       "%s: llama3 scaling needs factor >= 1 and 0 < low_freq_factor < "
                       "high_freq_factor (%g, %g, %g)",
                       what, factor, lo, hi);
    *s = (rope_scaling){(float)factor, (float)lo, (float)hi, orig, 0};
    return NC_OK;
}

nc_status hf_config_read_rope_type(const json_t *o, rope_scaling *scaling, unsigned allow,
                                   const char *what, const char *label, nc_error *err) {
    const char *type = "default";
    NC_TRY(nc_json_str(o, "type", &type, 0, what, err));
    NC_TRY(nc_json_str(o, "rope_type", &type, 0, what, err));
    if (!strcmp(type, "default")) return NC_OK;
    if ((allow & HF_ROPE_LLAMA3) && !strcmp(type, "llama3"))
        return read_llama3(o, scaling, what, err);
    if ((allow & HF_ROPE_LINEAR) && !strcmp(type, "linear")) {
        double factor = 0;
        NC_TRY(nc_json_num(o, "factor", &factor, 1, what, err));
        if (!(factor >= 1 && factor < 1e6))
            return nc_fail(err, NC_ERR_RANGE, "%s: linear scaling needs factor >= 1 (%g)", what,
                           factor);
        *scaling = (rope_scaling){.factor = (float)factor, .linear = 1};
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_UNSUPPORTED, "%s '%s' is not supported", label, type);
}

static nc_status read_type(const json_t *o, rope_scaling *scaling, const char *what,
                           const char *label, nc_error *err) {
    return hf_config_read_rope_type(o, scaling, scaling ? HF_ROPE_LLAMA3 : 0, what, label, err);
}

nc_status hf_config_read_rope(const json_t *o, double *theta, double *partial,
                              rope_scaling *scaling, const char *what, nc_error *err) {
    if (scaling) *scaling = (rope_scaling){0};
    NC_TRY(nc_json_num(o, "rope_theta", theta, 0, what, err));
    if (partial) NC_TRY(nc_json_num(o, "partial_rotary_factor", partial, 0, what, err));
    char sub[600];
    const json_t *rs = json_object_get(o, "rope_scaling");
    if (rs && !json_is_null(rs)) {
        snprintf(sub, sizeof sub, "%s: rope_scaling", what);
        if (!json_is_object(rs))
            return nc_fail(err, NC_ERR_FORMAT, "%s: field 'rope_scaling' must be an object", what);
        NC_TRY(read_type(rs, scaling, sub, sub, err));
    }
    const json_t *rp = json_object_get(o, "rope_parameters");
    if (rp && !json_is_null(rp)) {
        snprintf(sub, sizeof sub, "%s: rope_parameters", what);
        if (!json_is_object(rp))
            return nc_fail(err, NC_ERR_FORMAT, "%s: field 'rope_parameters' must be an object",
                           what);
        NC_TRY(nc_json_num(rp, "rope_theta", theta, 0, sub, err));
        if (partial) NC_TRY(nc_json_num(rp, "partial_rotary_factor", partial, 0, sub, err));
        char label[640];
        snprintf(label, sizeof label, "%s: rope_type", sub);
        NC_TRY(read_type(rp, scaling, sub, label, err));
    }
    if (!(*theta > 1.0) || !isfinite(*theta))
        return nc_fail(err, NC_ERR_RANGE, "%s: rope_theta %g must be a finite number > 1", what,
                       *theta);
    return NC_OK;
}

nc_status hf_config_load_dir(const char *dir, hf_config_part config, hf_config_part generation,
                             void *cfg, nc_error *err) {
    char path[4096];
    if (!nc_is_dir(dir)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no such model folder", dir);
    hf_path_join(path, sizeof path, dir, "config.json");
    if (!nc_file_exists(path)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: file not found", path);
    json_t *root;
    NC_TRY(nc_json_load_file(path, &root, err));
    nc_status st = config(root, cfg, path, err);
    json_decref(root);
    NC_TRY(st);
    hf_path_join(path, sizeof path, dir, "generation_config.json");
    if (!nc_file_exists(path)) return NC_OK;
    NC_TRY(nc_json_load_file(path, &root, err));
    st = json_is_object(root) ? generation(root, cfg, path, err)
                              : nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", path);
    json_decref(root);
    return st;
}
