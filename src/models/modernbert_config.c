/* ModernBERT config.json into a modernbert_config. Accepts both conventions
 * transformers has written: legacy `global_rope_theta` / `local_rope_theta` /
 * `global_attn_every_n_layers`, and v5 `rope_parameters` per layer type with
 * `layer_types`. Anything this engine would compute differently (biases in
 * the encoder, RoPE scaling, other model types) is rejected naming the field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mmap.h"
#include "io/hf_weights.h"
#include "models/modernbert.h"

#define MAX_DIM (1 << 20)
#define MAX_VOCAB (1 << 24)

static const struct {
    const char *name;
    modernbert_act act;
} act_names[] = {
    {"gelu", MODERNBERT_ACT_GELU},          {"gelu_python", MODERNBERT_ACT_GELU},
    {"gelu_new", MODERNBERT_ACT_GELU_TANH}, {"gelu_pytorch_tanh", MODERNBERT_ACT_GELU_TANH},
    {"silu", MODERNBERT_ACT_SILU},          {"swish", MODERNBERT_ACT_SILU},
    {"relu", MODERNBERT_ACT_RELU},
};

int modernbert_act_from_name(const char *name) {
    for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
        if (!strcmp(act_names[i].name, name)) return (int)act_names[i].act;
    return -1;
}

static nc_status get_act(const json_t *o, const char *key, modernbert_act *out, const char *what,
                         nc_error *err) {
    const char *name = "gelu";
    NC_TRY(nc_json_str(o, key, &name, 0, what, err));
    int a = modernbert_act_from_name(name);
    if (a < 0)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: %s '%s' is not supported", what, key, name);
    *out = (modernbert_act)a;
    return NC_OK;
}

static nc_status check_theta(double theta, const char *field, const char *what, nc_error *err) {
    if (!(theta > 1.0) || !isfinite(theta))
        return nc_fail(err, NC_ERR_RANGE, "%s: %s %g must be a finite number > 1", what, field,
                       theta);
    return NC_OK;
}

/* rope_parameters.<type>: only the default RoPE is computed here. */
static nc_status read_rope_type(const json_t *rp, const char *type, float *theta, const char *what,
                                nc_error *err) {
    const json_t *o = json_object_get(rp, type);
    if (!o || json_is_null(o)) return NC_OK;
    char sub[600];
    snprintf(sub, sizeof sub, "%s: rope_parameters.%s", what, type);
    if (!json_is_object(o)) return nc_fail(err, NC_ERR_FORMAT, "%s: must be an object", sub);
    const char *rt = "default";
    NC_TRY(nc_json_str(o, "rope_type", &rt, 0, sub, err));
    if (strcmp(rt, "default"))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: rope_type '%s' is not supported", sub, rt);
    double t = *theta;
    NC_TRY(nc_json_num(o, "rope_theta", &t, 0, sub, err));
    NC_TRY(check_theta(t, "rope_theta", sub, err));
    *theta = (float)t;
    return NC_OK;
}

static nc_status read_rope(const json_t *o, modernbert_config *c, const char *what, nc_error *err) {
    double g = 160000.0, l = 10000.0; /* ModernBertConfig.default_theta */
    NC_TRY(nc_json_num(o, "global_rope_theta", &g, 0, what, err));
    /* local_rope_theta: null meant "same as global" in the transformers 4.x code. */
    const json_t *lv = json_object_get(o, "local_rope_theta");
    if (lv && json_is_null(lv)) l = g;
    NC_TRY(nc_json_num(o, "local_rope_theta", &l, 0, what, err));
    NC_TRY(check_theta(g, "global_rope_theta", what, err));
    NC_TRY(check_theta(l, "local_rope_theta", what, err));
    c->theta_global = (float)g;
    c->theta_local = (float)l;
    const json_t *rp = json_object_get(o, "rope_parameters");
    if (rp && !json_is_null(rp)) {
        if (!json_is_object(rp))
            return nc_fail(err, NC_ERR_FORMAT, "%s: rope_parameters must be an object", what);
        NC_TRY(read_rope_type(rp, "full_attention", &c->theta_global, what, err));
        NC_TRY(read_rope_type(rp, "sliding_attention", &c->theta_local, what, err));
    }
    const json_t *rs = json_object_get(o, "rope_scaling");
    if (rs && !json_is_null(rs))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: rope_scaling is not supported", what);
    return NC_OK;
}

/* layer_types when given, else every n-th layer (from 0) is global. */
static nc_status read_layer_types(const json_t *o, modernbert_config *c, const char *what,
                                  nc_error *err) {
    int every = 3;
    NC_TRY(nc_json_int_in(o, "global_attn_every_n_layers", &every, 0, 1, 1 << 20, what, err));
    for (int i = 0; i < c->num_hidden_layers; i++)
        c->is_global[i] = i % every == 0;
    const json_t *lt = json_object_get(o, "layer_types");
    if (!lt || json_is_null(lt)) return NC_OK;
    if (!json_is_array(lt) || (int)json_array_size(lt) != c->num_hidden_layers)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: layer_types must be a list of num_hidden_layers (%d) strings", what,
                       c->num_hidden_layers);
    for (int i = 0; i < c->num_hidden_layers; i++) {
        const char *s = json_string_value(json_array_get(lt, (size_t)i));
        if (s && !strcmp(s, "full_attention"))
            c->is_global[i] = 1;
        else if (s && !strcmp(s, "sliding_attention"))
            c->is_global[i] = 0;
        else
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: layer_types[%d] must be 'full_attention' or 'sliding_attention'",
                           what, i);
    }
    return NC_OK;
}

static nc_status reject_flag(const json_t *o, const char *key, const char *what, nc_error *err) {
    int flag = 0;
    NC_TRY(nc_json_bool(o, key, &flag, 0, what, err));
    if (flag) return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: %s = true is not supported", what, key);
    return NC_OK;
}

/* id2label {"0": "negative", ...} into c->id2label (num_labels slots). */
static nc_status read_id2label(const json_t *map, modernbert_config *c, const char *what,
                               nc_error *err) {
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)map, key, val) {
        char *end;
        long id = strtol(key, &end, 10);
        if (*end || end == key || id < 0 || id >= c->num_labels || !json_is_string(val) ||
            c->id2label[id])
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: id2label['%s'] must map a distinct id in [0, %d) to a string", what,
                           key, c->num_labels);
        if (!(c->id2label[id] = strdup(json_string_value(val))))
            return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    }
    return NC_OK;
}

static nc_status read_head(const json_t *o, modernbert_config *c, const char *what, nc_error *err) {
    c->head = MODERNBERT_HEAD_NONE;
    const json_t *arch = json_object_get(o, "architectures");
    const char *a = json_is_array(arch) ? json_string_value(json_array_get(arch, 0)) : NULL;
    if (a && !strcmp(a, "ModernBertForMaskedLM"))
        c->head = MODERNBERT_HEAD_MLM;
    else if (a && !strcmp(a, "ModernBertForSequenceClassification"))
        c->head = MODERNBERT_HEAD_CLASSIFIER;
    else if (a && strcmp(a, "ModernBertModel"))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: architectures[0] '%s' is not supported (ModernBertModel, "
                       "ModernBertForMaskedLM, ModernBertForSequenceClassification)",
                       what, a);
    const char *pool = "cls";
    NC_TRY(nc_json_str(o, "classifier_pooling", &pool, 0, what, err));
    if (!strcmp(pool, "cls"))
        c->pooling = MODERNBERT_POOL_CLS;
    else if (!strcmp(pool, "mean"))
        c->pooling = MODERNBERT_POOL_MEAN;
    else
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: classifier_pooling '%s' is not cls or mean",
                       what, pool);
    c->classifier_bias = 0;
    c->decoder_bias = 1;
    NC_TRY(nc_json_bool(o, "classifier_bias", &c->classifier_bias, 0, what, err));
    NC_TRY(nc_json_bool(o, "decoder_bias", &c->decoder_bias, 0, what, err));
    NC_TRY(get_act(o, "classifier_activation", &c->classifier_act, what, err));

    /* id2label: {"0": "negative", ...}; num_labels otherwise (default 2). */
    const json_t *map = json_object_get(o, "id2label");
    int n = 2;
    if (json_is_object(map) && json_object_size(map) > 0) n = (int)json_object_size(map);
    NC_TRY(nc_json_int_in(o, "num_labels", &n, 0, 1, 1 << 16, what, err));
    if (json_is_object(map) && json_object_size(map) > 0 && (int)json_object_size(map) != n)
        return nc_fail(err, NC_ERR_FORMAT, "%s: id2label has %zu entries but num_labels is %d",
                       what, json_object_size(map), n);
    c->num_labels = n;
    c->id2label = calloc((size_t)n, sizeof *c->id2label);
    if (!c->id2label) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    if (json_is_object(map)) NC_TRY(read_id2label(map, c, what, err));
    for (int i = 0; i < n; i++) {
        if (c->id2label[i]) continue;
        char buf[32];
        snprintf(buf, sizeof buf, "LABEL_%d", i);
        if (!(c->id2label[i] = strdup(buf)))
            return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    }
    return NC_OK;
}

static int32_t token_id(const json_t *o, const char *key, int vocab) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= vocab)
        return -1;
    return (int32_t)json_integer_value(v);
}

static nc_status parse_config(const json_t *o, modernbert_config *c, const char *what,
                              nc_error *err) {
    if (!json_is_object(o)) return nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", what);
    const char *type = NULL;
    NC_TRY(nc_json_str(o, "model_type", &type, 1, what, err));
    if (strcmp(type, "modernbert"))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: model_type '%s' is not supported (this engine runs 'modernbert')", what,
                       type);
    NC_TRY(nc_json_int_in(o, "vocab_size", &c->vocab_size, 1, 1, MAX_VOCAB, what, err));
    NC_TRY(nc_json_int_in(o, "hidden_size", &c->hidden_size, 1, 1, MAX_DIM, what, err));
    NC_TRY(nc_json_int_in(o, "intermediate_size", &c->intermediate_size, 1, 1, MAX_DIM, what, err));
    NC_TRY(nc_json_int_in(o, "num_hidden_layers", &c->num_hidden_layers, 1, 1,
                          MODERNBERT_MAX_LAYERS, what, err));
    NC_TRY(
        nc_json_int_in(o, "num_attention_heads", &c->num_attention_heads, 1, 1, 4096, what, err));
    if (c->hidden_size % c->num_attention_heads)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: hidden_size %d is not a multiple of num_attention_heads %d", what,
                       c->hidden_size, c->num_attention_heads);
    c->head_dim = c->hidden_size / c->num_attention_heads;
    if (c->head_dim % 2)
        return nc_fail(err, NC_ERR_FORMAT, "%s: head_dim %d must be even (RoPE)", what,
                       c->head_dim);
    c->max_position_embeddings = 8192;
    NC_TRY(nc_json_int_in(o, "max_position_embeddings", &c->max_position_embeddings, 0, 1, 1 << 20,
                          what, err));
    c->local_attention = 128;
    NC_TRY(nc_json_int_in(o, "local_attention", &c->local_attention, 0, 0, 1 << 24, what, err));
    double eps = 1e-5;
    NC_TRY(nc_json_num(o, "norm_eps", &eps, 0, what, err));
    if (!(eps > 0 && eps < 1))
        return nc_fail(err, NC_ERR_RANGE, "%s: norm_eps %g must be in (0, 1)", what, eps);
    c->norm_eps = (float)eps;
    NC_TRY(reject_flag(o, "norm_bias", what, err));
    NC_TRY(reject_flag(o, "attention_bias", what, err));
    NC_TRY(reject_flag(o, "mlp_bias", what, err));
    NC_TRY(get_act(o, "hidden_activation", &c->hidden_act, what, err));
    NC_TRY(read_rope(o, c, what, err));
    NC_TRY(read_layer_types(o, c, what, err));
    c->pad_token_id = token_id(o, "pad_token_id", c->vocab_size);
    c->cls_token_id = token_id(o, "cls_token_id", c->vocab_size);
    c->sep_token_id = token_id(o, "sep_token_id", c->vocab_size);
    return read_head(o, c, what, err);
}

void modernbert_config_free(modernbert_config *cfg) {
    if (!cfg || !cfg->id2label) return;
    for (int i = 0; i < cfg->num_labels; i++)
        free(cfg->id2label[i]);
    free(cfg->id2label);
    cfg->id2label = NULL;
}

nc_status modernbert_config_parse(const char *json, size_t len, const char *what,
                                  modernbert_config *cfg, nc_error *err) {
    memset(cfg, 0, sizeof *cfg);
    json_t *root;
    NC_TRY(nc_json_parse(json, len, what, &root, err));
    nc_status st = parse_config(root, cfg, what, err);
    json_decref(root);
    if (st != NC_OK) modernbert_config_free(cfg);
    return st;
}

nc_status modernbert_config_load(const char *dir, modernbert_config *cfg, nc_error *err) {
    memset(cfg, 0, sizeof *cfg);
    char path[4096];
    if (!nc_is_dir(dir)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no such model folder", dir);
    hf_path_join(path, sizeof path, dir, "config.json");
    if (!nc_file_exists(path)) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: file not found", path);
    char *json;
    size_t len;
    NC_TRY(nc_read_file(path, &json, &len, err));
    nc_status st = modernbert_config_parse(json, len, path, cfg, err);
    free(json);
    return st;
}
