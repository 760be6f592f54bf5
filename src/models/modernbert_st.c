/* Sentence-transformers folder settings and pooling (modernbert_st.h). */
#include "models/modernbert_st.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mmap.h"

static const char *const pooling_names[] = {"cls",       "mean",  "max", "lasttoken",
                                            "mean_sqrt_len_tokens", "weightedmean"};
/* The older form: one boolean per mode (sentence-transformers before 6). */
static const char *const legacy_keys[] = {
    "pooling_mode_cls_token", "pooling_mode_mean_tokens",          "pooling_mode_max_tokens",
    "pooling_mode_lasttoken", "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"};
#define N_POOLINGS 6

const char *modernbert_st_pooling_name(int pooling) {
    return pooling >= 0 && pooling < N_POOLINGS ? pooling_names[pooling] : "?";
}

static int pooling_by_name(const char *name) {
    for (int i = 0; i < N_POOLINGS; i++)
        if (!strcmp(name, pooling_names[i])) return i;
    return -1;
}

/* Loads dir/name into *out when the file exists (*out NULL otherwise). */
static nc_status load_optional(const char *dir, const char *name, char *path, size_t cap,
                               json_t **out, nc_error *err) {
    *out = NULL;
    snprintf(path, cap, "%s/%s", dir, name);
    if (!nc_file_exists(path)) return NC_OK;
    NC_TRY(nc_json_load_file(path, out, err));
    if (!json_is_object(*out) && !json_is_array(*out)) {
        json_decref(*out);
        *out = NULL;
        return nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", path);
    }
    return NC_OK;
}

static nc_status read_pooling(const char *dir, const char *sub, modernbert_st *st, nc_error *err) {
    char path[4096], name[600];
    snprintf(name, sizeof name, "%s/config.json", sub);
    json_t *cfg;
    NC_TRY(load_optional(dir, name, path, sizeof path, &cfg, err));
    if (!cfg) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: cannot open (named by modules.json)", path);
    nc_status st_ = NC_OK;
    json_t *mode = json_object_get(cfg, "pooling_mode");
    int n_modes = 0;
    if (json_is_string(mode)) {
        st->pooling = pooling_by_name(json_string_value(mode));
        n_modes = 1;
        if (st->pooling < 0)
            st_ = nc_fail(err, NC_ERR_FORMAT, "%s: field 'pooling_mode': unknown mode '%s'", path,
                          json_string_value(mode));
    } else if (json_is_array(mode)) {
        n_modes = (int)json_array_size(mode);
        const char *first = json_string_value(json_array_get(mode, 0));
        st->pooling = first ? pooling_by_name(first) : -1;
        if (n_modes != 1 || st->pooling < 0)
            st_ = nc_fail(err, NC_ERR_UNSUPPORTED,
                          "%s: field 'pooling_mode': exactly one known mode is supported", path);
    } else if (mode && !json_is_null(mode)) {
        st_ = nc_fail(err, NC_ERR_FORMAT, "%s: field 'pooling_mode' must be a string", path);
    } else {
        st->pooling = MODERNBERT_ST_MEAN; /* sentence-transformers' default with no flag set */
        for (int i = 0; st_ == NC_OK && i < N_POOLINGS; i++) {
            int on = 0;
            st_ = nc_json_bool(cfg, legacy_keys[i], &on, 0, path, err);
            if (on && n_modes++ == 0) st->pooling = i;
        }
        if (st_ == NC_OK && n_modes > 1)
            st_ = nc_fail(err, NC_ERR_UNSUPPORTED,
                          "%s: %d pooling modes are set; one is supported", path, n_modes);
    }
    if (st_ == NC_OK) st_ = nc_json_bool(cfg, "include_prompt", &st->include_prompt, 0, path, err);
    json_decref(cfg);
    return st_;
}

/* modules.json: [{"path": "", "type": "...Transformer"}, {"path": "1_Pooling", "type":
 * "...Pooling"}, {"type": "...Normalize"}]. */
static nc_status read_modules(const char *dir, const json_t *mods, const char *path,
                              modernbert_st *st, nc_error *err) {
    if (!json_is_array(mods) || json_array_size(mods) == 0)
        return nc_fail(err, NC_ERR_FORMAT, "%s: must be a non-empty array of modules", path);
    int has_pooling = 0;
    size_t i;
    json_t *mod;
    json_array_foreach(mods, i, mod) {
        const char *type = json_string_value(json_object_get(mod, "type"));
        const char *sub = json_string_value(json_object_get(mod, "path"));
        if (!type || !sub)
            return nc_fail(err, NC_ERR_FORMAT, "%s: module %zu needs string 'type' and 'path'",
                           path, i);
        const char *dot = strrchr(type, '.');
        const char *cls = dot ? dot + 1 : type;
        if (!strcmp(cls, "Transformer")) {
            if (i != 0 || *sub)
                return nc_fail(err, NC_ERR_UNSUPPORTED,
                               "%s: module %zu: the Transformer must be the first module, at the "
                               "folder's root (path \"\")",
                               path, i);
        } else if (i == 0) {
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "%s: module 0 is %s; a Transformer must come first", path, type);
        } else if (!strcmp(cls, "Pooling") && !has_pooling) {
            NC_TRY(read_pooling(dir, sub, st, err));
            has_pooling = 1;
        } else if (!strcmp(cls, "Normalize") && has_pooling) {
            st->normalize = 1;
        } else {
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "%s: module %zu (%s) is not supported: nectar runs Transformer, "
                           "Pooling, Normalize",
                           path, i, type);
        }
    }
    if (!has_pooling)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: no Pooling module", path);
    return NC_OK;
}

static nc_status read_limits(const char *dir, modernbert_st *st, nc_error *err) {
    char path[4096];
    json_t *j;
    NC_TRY(load_optional(dir, "sentence_bert_config.json", path, sizeof path, &j, err));
    int64_t max_seq = 0;
    nc_status s = j ? nc_json_int(j, "max_seq_length", &max_seq, 0, path, err) : NC_OK;
    json_decref(j);
    if (s == NC_OK && (max_seq < 0 || max_seq > (1 << 24)))
        s = nc_fail(err, NC_ERR_RANGE, "%s: field 'max_seq_length' = %lld is out of range", path,
                    (long long)max_seq);
    st->max_seq_length = (int)max_seq;
    if (s != NC_OK || st->max_seq_length) return s;
    /* sentence-transformers 6 keeps the limit in the tokenizer's config; an
     * unset one is a huge placeholder there (1e30), meaning no limit. */
    NC_TRY(load_optional(dir, "tokenizer_config.json", path, sizeof path, &j, err));
    json_t *v = j ? json_object_get(j, "model_max_length") : NULL;
    if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= (1 << 24))
        st->max_seq_length = (int)json_integer_value(v);
    json_decref(j);
    return NC_OK;
}

static nc_status read_prompts(const char *dir, modernbert_st *st, nc_error *err) {
    char path[4096];
    json_t *j;
    NC_TRY(load_optional(dir, "config_sentence_transformers.json", path, sizeof path, &j, err));
    if (!j) return NC_OK;
    nc_status s = NC_OK;
    json_t *prompts = json_object_get(j, "prompts");
    if (prompts && !json_is_null(prompts) && !json_is_object(prompts))
        s = nc_fail(err, NC_ERR_FORMAT, "%s: field 'prompts' must be an object", path);
    const char *key;
    json_t *v;
    json_object_foreach(json_is_object(prompts) ? prompts : NULL, key, v) {
        if (s != NC_OK) break;
        if (!json_is_string(v))
            s = nc_fail(err, NC_ERR_FORMAT, "%s: prompt '%s' must be a string", path, key);
        else if (st->n_prompts == MODERNBERT_ST_MAX_PROMPTS)
            s = nc_fail(err, NC_ERR_RANGE, "%s: more than %d prompts", path,
                        MODERNBERT_ST_MAX_PROMPTS);
        else {
            st->prompt_names[st->n_prompts] = strdup(key);
            st->prompts[st->n_prompts] = strdup(json_string_value(v));
            if (!st->prompt_names[st->n_prompts++] || !st->prompts[st->n_prompts - 1])
                s = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
        }
    }
    const char *def = NULL;
    if (s == NC_OK) s = nc_json_str(j, "default_prompt_name", &def, 0, path, err);
    if (s == NC_OK && def) {
        if (!modernbert_st_prompt(st, def))
            s = nc_fail(err, NC_ERR_FORMAT,
                        "%s: default_prompt_name '%s' is not one of the prompts", path, def);
        else if (!(st->default_prompt_name = strdup(def)))
            s = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    }
    json_decref(j);
    return s;
}

nc_status modernbert_st_load(const char *dir, int default_pooling, modernbert_st *st,
                             nc_error *err) {
    memset(st, 0, sizeof *st);
    st->pooling = default_pooling;
    st->include_prompt = 1;
    char path[4096];
    json_t *mods;
    NC_TRY(load_optional(dir, "modules.json", path, sizeof path, &mods, err));
    if (!mods) return NC_OK;
    st->is_st = 1;
    nc_status s = read_modules(dir, mods, path, st, err);
    json_decref(mods);
    if (s == NC_OK) s = read_limits(dir, st, err);
    if (s == NC_OK) s = read_prompts(dir, st, err);
    if (s != NC_OK) modernbert_st_free(st);
    return s;
}

void modernbert_st_free(modernbert_st *st) {
    if (!st) return;
    for (int i = 0; i < st->n_prompts; i++) {
        free(st->prompt_names[i]);
        free(st->prompts[i]);
    }
    free(st->default_prompt_name);
    memset(st, 0, sizeof *st);
}

const char *modernbert_st_prompt(const modernbert_st *st, const char *name) {
    for (int i = 0; name && i < st->n_prompts; i++)
        if (!strcmp(st->prompt_names[i], name)) return st->prompts[i];
    return NULL;
}

/* One row: x [seq][d]; token t is pooled when mask[t] (NULL: all) and t >=
 * skip; sums in double. */
static void pool_row(int pooling, const float *x, const int32_t *mask, int skip, int seq, int d,
                     float *out) {
#define POOLED(t) ((!mask || mask[t]) && (t) >= skip)
    int first = -1, last = -1;
    double count = 0, wsum = 0;
    for (int t = 0; t < seq; t++)
        if (POOLED(t)) {
            if (first < 0) first = t;
            last = t;
            count += 1;
            wsum += t + 1;
        }
    if (pooling == MODERNBERT_ST_CLS || pooling == MODERNBERT_ST_LASTTOKEN) {
        int t = pooling == MODERNBERT_ST_CLS ? (first < 0 ? 0 : first) : last;
        for (int j = 0; j < d; j++)
            out[j] = t < 0 ? 0.0f : x[(size_t)t * d + j];
        return;
    }
    for (int j = 0; j < d; j++) {
        double acc = pooling == MODERNBERT_ST_MAX ? -INFINITY : 0.0;
        for (int t = 0; t < seq; t++) {
            if (!POOLED(t)) continue;
            double v = x[(size_t)t * d + j];
            if (pooling == MODERNBERT_ST_MAX)
                acc = v > acc ? v : acc;
            else
                acc += pooling == MODERNBERT_ST_WEIGHTEDMEAN ? (t + 1) * v : v;
        }
        if (pooling == MODERNBERT_ST_MEAN) acc /= count > 1e-9 ? count : 1e-9;
        if (pooling == MODERNBERT_ST_MEAN_SQRT_LEN) acc /= sqrt(count > 1e-9 ? count : 1e-9);
        if (pooling == MODERNBERT_ST_WEIGHTEDMEAN) acc /= wsum > 1e-9 ? wsum : 1e-9;
        out[j] = (float)acc;
    }
#undef POOLED
}

void modernbert_st_pool(int pooling, int normalize, const float *last, const int32_t *mask,
                        const int *skip, int batch, int seq, int d, float *out) {
    for (int b = 0; b < batch; b++) {
        float *o = out + (size_t)b * d;
        pool_row(pooling, last + (size_t)b * seq * d, mask ? mask + (size_t)b * seq : NULL,
                 skip ? skip[b] : 0, seq, d, o);
        if (!normalize) continue;
        double s = 0;
        for (int j = 0; j < d; j++)
            s += (double)o[j] * o[j];
        double n = sqrt(s);
        float inv = (float)(1.0 / (n > 1e-12 ? n : 1e-12)); /* torch's F.normalize */
        for (int j = 0; j < d; j++)
            o[j] *= inv;
    }
}
