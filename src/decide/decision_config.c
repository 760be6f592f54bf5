/* decision.json: the decision head's config (docs/decision.md), read and
 * checked against the encoder's config so a wrong folder fails at load with
 * one line naming the field, never later inside a forward pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "decide/decision.h"

#define DECISION_FORMAT "nectar-decision-1"
#define MAX_WIDTH (1 << 16)

static nc_status read_marker_ids(const json_t *o, const modernbert_config *enc, decision_config *c,
                                 const char *what, nc_error *err) {
    const json_t *a = json_object_get(o, "marker_token_ids");
    if (!a || json_is_null(a))
        return nc_fail(err, NC_ERR_NOT_FOUND, "%s: missing field 'marker_token_ids'", what);
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    if (n != 1 && n != (size_t)c->num_markers)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: field 'marker_token_ids' must be an array of num_markers (%d) ids or "
                       "of one id",
                       what, c->num_markers);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, i);
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id >= enc->vocab_size)
            return nc_fail(err, NC_ERR_RANGE,
                           "%s: marker_token_ids[%zu] must be a token id in [0, %d) (the "
                           "encoder's vocab_size)",
                           what, i, enc->vocab_size);
        for (size_t j = 0; j < i; j++)
            if (c->marker_token_ids[j] == (int32_t)id)
                return nc_fail(err, NC_ERR_FORMAT,
                               "%s: marker_token_ids[%zu] repeats marker_token_ids[%zu]", what, i,
                               j);
        c->marker_token_ids[i] = (int32_t)id;
    }
    c->n_marker_ids = (int)n;
    return NC_OK;
}

static nc_status read_features(const json_t *o, decision_config *c, const char *what,
                               nc_error *err) {
    const json_t *a = json_object_get(o, "action_features");
    if (!a || json_is_null(a))
        return nc_fail(err, NC_ERR_NOT_FOUND, "%s: missing field 'action_features'", what);
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    if (n < 1 || n > DECISION_MAX_FEATURES)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: field 'action_features' must be an array of 1 to %d names from "
                       "\"raw_probs\", \"cls\"",
                       what, DECISION_MAX_FEATURES);
    c->feature_width = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (s && !strcmp(s, "raw_probs")) {
            c->features[i] = DECISION_FEAT_RAW_PROBS;
            c->feature_width += c->num_markers;
        } else if (s && !strcmp(s, "cls")) {
            c->features[i] = DECISION_FEAT_CLS;
            c->feature_width += c->hidden_size;
        } else {
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: action_features[%zu] must be \"raw_probs\" or \"cls\"", what, i);
        }
    }
    c->n_features = (int)n;
    return NC_OK;
}

static nc_status read_labels(const json_t *o, decision_config *c, const char *what,
                             nc_error *err) {
    const json_t *a = json_object_get(o, "action_labels");
    if (!a || json_is_null(a)) return NC_OK;
    if (!json_is_array(a) || json_array_size(a) != (size_t)c->num_actions)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: field 'action_labels' must be an array of num_actions (%d) strings",
                       what, c->num_actions);
    c->action_labels = calloc((size_t)c->num_actions, sizeof *c->action_labels);
    if (!c->action_labels) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    for (int i = 0; i < c->num_actions; i++) {
        const char *s = json_string_value(json_array_get(a, (size_t)i));
        if (!s) return nc_fail(err, NC_ERR_FORMAT, "%s: action_labels[%d] must be a string", what, i);
        if (!(c->action_labels[i] = strdup(s)))
            return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    }
    return NC_OK;
}

static nc_status parse(const json_t *o, const char *what, const modernbert_config *enc,
                       decision_config *c, nc_error *err) {
    const char *s = NULL;
    NC_TRY(nc_json_str(o, "format", &s, 1, what, err));
    if (strcmp(s, DECISION_FORMAT))
        return nc_fail(err, NC_ERR_FORMAT, "%s: field 'format' is \"%s\", expected \"%s\"", what,
                       s, DECISION_FORMAT);
    NC_TRY(nc_json_int_in(o, "hidden_size", &c->hidden_size, 1, 1, MAX_WIDTH, what, err));
    if (c->hidden_size != enc->hidden_size)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: field 'hidden_size' = %d contradicts the encoder's hidden_size %d",
                       what, c->hidden_size, enc->hidden_size);
    NC_TRY(nc_json_int_in(o, "num_markers", &c->num_markers, 1, 2, DECISION_MAX_MARKERS, what,
                          err));
    NC_TRY(read_marker_ids(o, enc, c, what, err));
    NC_TRY(nc_json_int_in(o, "type_vocab_size", &c->type_vocab_size, 1, 1, MAX_WIDTH, what, err));
    if (c->type_vocab_size != c->num_markers + 1)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: field 'type_vocab_size' = %d contradicts num_markers %d (type ids "
                       "count markers: it must be num_markers + 1)",
                       what, c->type_vocab_size, c->num_markers);
    NC_TRY(nc_json_int_in(o, "head_layers", &c->head_layers, 1, 0, DECISION_MAX_LAYERS, what,
                          err));
    NC_TRY(nc_json_int_in(o, "head_attention_heads", &c->head_heads, 1, 1, MAX_WIDTH, what, err));
    if (c->hidden_size % c->head_heads)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: field 'head_attention_heads' = %d does not divide hidden_size %d", what,
                       c->head_heads, c->hidden_size);
    NC_TRY(nc_json_int_in(o, "head_intermediate_size", &c->head_intermediate, 1, 1, MAX_WIDTH,
                          what, err));
    NC_TRY(nc_json_str(o, "head_norm", &s, 1, what, err));
    if (strcmp(s, "pre") && strcmp(s, "post"))
        return nc_fail(err, NC_ERR_FORMAT, "%s: field 'head_norm' must be \"pre\" or \"post\"",
                       what);
    c->head_pre_norm = !strcmp(s, "pre");
    double eps = 0;
    NC_TRY(nc_json_num(o, "head_norm_eps", &eps, 1, what, err));
    if (!(eps > 0 && eps < 1))
        return nc_fail(err, NC_ERR_RANGE, "%s: field 'head_norm_eps' must lie in (0, 1)", what);
    c->head_norm_eps = (float)eps;
    NC_TRY(nc_json_str(o, "head_activation", &s, 1, what, err));
    if (strcmp(s, "gelu"))
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: field 'head_activation' is \"%s\"; only \"gelu\" (exact) is supported",
                       what, s);
    NC_TRY(nc_json_int_in(o, "scorer_hidden_size", &c->scorer_hidden, 1, 1, MAX_WIDTH, what, err));
    NC_TRY(read_features(o, c, what, err));
    NC_TRY(nc_json_int_in(o, "action_hidden_size", &c->action_hidden, 1, 1, MAX_WIDTH, what, err));
    NC_TRY(nc_json_int_in(o, "num_actions", &c->num_actions, 1, 1, MAX_WIDTH, what, err));
    double t = 0;
    NC_TRY(nc_json_num(o, "temperature", &t, 1, what, err));
    if (!(t > 0) || !isfinite(t))
        return nc_fail(err, NC_ERR_RANGE, "%s: field 'temperature' must be a positive number",
                       what);
    c->temperature = (float)t;
    return read_labels(o, c, what, err);
}

nc_status decision_config_parse(const char *json, size_t len, const char *what,
                                const modernbert_config *enc, decision_config *cfg, nc_error *err) {
    memset(cfg, 0, sizeof *cfg);
    json_t *o = NULL;
    NC_TRY(nc_json_parse(json, len, what, &o, err));
    nc_status st = parse(o, what, enc, cfg, err);
    json_decref(o);
    if (st != NC_OK) decision_config_free(cfg);
    return st;
}

void decision_config_free(decision_config *cfg) {
    for (int i = 0; cfg->action_labels && i < cfg->num_actions; i++)
        free(cfg->action_labels[i]);
    free(cfg->action_labels);
    cfg->action_labels = NULL;
}
