/* Gemma 3 config.json (gemma3_config.h), as transformers 5's
 * Gemma3TextConfig reads it: the hub's 4.x spelling (top-level rope_theta,
 * rope_local_base_freq, rope_scaling, sliding_window_pattern) and
 * transformers 5's (layer_types, rope_parameters per layer type). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/gemma3_config.h"

#include "base/json.h"
#include "models/hf_config.h"
#include "models/qwen3_config.h"

/* Gemma3TextConfig's defaults */
#define GEMMA3_VOCAB 262208
#define GEMMA3_HEAD_DIM 256
#define GEMMA3_CONTEXT 131072
#define GEMMA3_THETA 1000000.0
#define GEMMA3_LOCAL_THETA 10000.0
#define GEMMA3_WINDOW 4096
#define GEMMA3_PATTERN 6
#define GEMMA3_BOS 2
#define GEMMA3_EOS 1

static nc_status check_supported(const json_t *t, const char *what, nc_error *err) {
    const char *type = "gemma3_text";
    NC_TRY(nc_json_str(t, "model_type", &type, 0, what, err));
    if (strcmp(type, "gemma3_text"))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: model_type '%s' is not supported (this reader takes 'gemma3_text')",
                       what, type);
    /* Gemma3MLP reads hidden_activation (hidden_act is not used) */
    const char *act = "gelu_pytorch_tanh";
    NC_TRY(nc_json_str(t, "hidden_activation", &act, 0, what, err));
    if (strcmp(act, "gelu_pytorch_tanh"))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: hidden_activation '%s' is not supported (gelu_pytorch_tanh)", what,
                       act);
    static const char *const refused[] = {"attention_bias", "use_bidirectional_attention"};
    for (int i = 0; i < 2; i++) {
        int flag = 0;
        NC_TRY(nc_json_bool(t, refused[i], &flag, 0, what, err));
        if (flag)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: %s is not supported", what, refused[i]);
    }
    return NC_OK;
}

/* A softcap field: null/absent (0), or a number > 0. */
static nc_status read_cap(const json_t *t, const char *key, float *out, const char *what,
                          nc_error *err) {
    double v = 0;
    NC_TRY(nc_json_num(t, key, &v, 0, what, err));
    if (v < 0 || !isfinite(v))
        return nc_fail(err, NC_ERR_RANGE, "%s: %s %g must be a number > 0", what, key, v);
    *out = (float)v;
    return NC_OK;
}

static void set_sliding(qwen3_config *c, int l, int on) {
    if (on) c->sliding[l >> 3] |= (unsigned char)(1u << (l & 7));
}

/* layer_types, else sliding_window_pattern (every pattern-th layer global). */
static nc_status read_layer_types(const json_t *t, qwen3_config *c, const char *what,
                                  nc_error *err) {
    int n = c->num_hidden_layers;
    const json_t *lt = json_object_get(t, "layer_types");
    if (lt && !json_is_null(lt)) {
        if (!json_is_array(lt) || (int)json_array_size(lt) != n)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: layer_types must be a list of num_hidden_layers (%d) strings", what,
                           n);
        for (int l = 0; l < n; l++) {
            const char *s = json_string_value(json_array_get(lt, (size_t)l));
            int sliding = s && !strcmp(s, "sliding_attention");
            if (!sliding && !(s && !strcmp(s, "full_attention")))
                return nc_fail(err, NC_ERR_UNSUPPORTED,
                               "%s: layer_types[%d] is not 'sliding_attention' or "
                               "'full_attention'",
                               what, l);
            set_sliding(c, l, sliding);
        }
    } else {
        int pattern = GEMMA3_PATTERN;
        NC_TRY(nc_json_int_in(t, "sliding_window_pattern", &pattern, 0, 1, QWEN3_MAX_LAYERS, what,
                              err));
        for (int l = 0; l < n; l++)
            set_sliding(c, l, (l + 1) % pattern != 0);
    }
    int any = 0;
    for (int l = 0; l < n; l++)
        any |= qwen3_layer_sliding(c, l);
    c->sliding_window = GEMMA3_WINDOW;
    const json_t *w = json_object_get(t, "sliding_window");
    if (any && w && json_is_null(w))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: sliding_window is null but layers are sliding_attention", what);
    return nc_json_int_in(t, "sliding_window", &c->sliding_window, 0, 1, 1 << 24, what, err);
}

/* One layer type's RoPE object of rope_parameters (transformers 5). */
static nc_status read_rope_params(const json_t *rp, const char *key, double *theta,
                                  rope_scaling *scaling, unsigned allow, const char *what,
                                  nc_error *err) {
    const json_t *p = json_object_get(rp, key);
    if (!p || json_is_null(p)) return NC_OK;
    char sub[600], label[640];
    snprintf(sub, sizeof sub, "%s: rope_parameters.%s", what, key);
    snprintf(label, sizeof label, "%s: rope_type", sub);
    if (!json_is_object(p)) return nc_fail(err, NC_ERR_FORMAT, "%s must be an object", sub);
    NC_TRY(nc_json_num(p, "rope_theta", theta, 0, sub, err));
    return hf_config_read_rope_type(p, scaling, allow, sub, label, err);
}

/* The global layers' rope_theta and scaling (default or linear), the local
 * layers' rope_local_base_freq (default only); rope_parameters wins. */
static nc_status read_rope(const json_t *t, qwen3_config *c, const char *what, nc_error *err) {
    double theta = GEMMA3_THETA, local = GEMMA3_LOCAL_THETA;
    rope_scaling none = {0};
    NC_TRY(nc_json_num(t, "rope_theta", &theta, 0, what, err));
    NC_TRY(nc_json_num(t, "rope_local_base_freq", &local, 0, what, err));
    const json_t *rs = json_object_get(t, "rope_scaling");
    char sub[600];
    if (rs && !json_is_null(rs)) {
        snprintf(sub, sizeof sub, "%s: rope_scaling", what);
        if (!json_is_object(rs))
            return nc_fail(err, NC_ERR_FORMAT, "%s: field 'rope_scaling' must be an object", what);
        NC_TRY(hf_config_read_rope_type(rs, &c->rope_scaling, HF_ROPE_LINEAR, sub, sub, err));
    }
    const json_t *rp = json_object_get(t, "rope_parameters");
    if (rp && !json_is_null(rp)) {
        if (!json_is_object(rp))
            return nc_fail(err, NC_ERR_FORMAT, "%s: field 'rope_parameters' must be an object",
                           what);
        NC_TRY(read_rope_params(rp, "full_attention", &theta, &c->rope_scaling, HF_ROPE_LINEAR,
                                what, err));
        NC_TRY(read_rope_params(rp, "sliding_attention", &local, &none, 0, what, err));
    }
    if (!(theta > 1.0) || !isfinite(theta) || !(local > 1.0) || !isfinite(local))
        return nc_fail(err, NC_ERR_RANGE,
                       "%s: rope_theta %g and rope_local_base_freq %g must be finite numbers > 1",
                       what, theta, local);
    c->rope_theta = (float)theta;
    c->rope_local_theta = (float)local;
    return NC_OK;
}

/* The text model's fields of t; the shape through the shared reader (on a
 * copy without the RoPE fields, which Gemma spells per layer type). */
static nc_status read_text(const json_t *t, qwen3_config *c, const char *what, nc_error *err) {
    NC_TRY(check_supported(t, what, err));
    c->vocab_size = GEMMA3_VOCAB;
    c->max_position_embeddings = GEMMA3_CONTEXT;
    c->rms_norm_eps = 1e-6f;
    c->rope_theta = (float)GEMMA3_THETA;
    c->tie_word_embeddings = 1;
    json_t *shape = json_copy((json_t *)t);
    if (!shape) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    json_object_del(shape, "rope_scaling");
    json_object_del(shape, "rope_parameters");
    json_object_del(shape, "rope_theta");
    nc_status st = qwen3_config_read_shape(shape, c, 0, what, err);
    json_decref(shape);
    NC_TRY(st);
    c->head_dim = GEMMA3_HEAD_DIM; /* not hidden / heads: Gemma's default */
    NC_TRY(nc_json_int_in(t, "head_dim", &c->head_dim, 0, 2, 65536, what, err));
    if (c->head_dim % 2 || (int64_t)c->head_dim * c->num_attention_heads > (1 << 20))
        return nc_fail(err, NC_ERR_FORMAT, "%s: head_dim %d must be even and fit", what,
                       c->head_dim);
    if (!json_object_get(t, "bos_token_id")) c->bos_token_id = GEMMA3_BOS;
    NC_TRY(read_rope(t, c, what, err));
    NC_TRY(read_layer_types(t, c, what, err));
    double scalar = GEMMA3_HEAD_DIM;
    NC_TRY(nc_json_num(t, "query_pre_attn_scalar", &scalar, 0, what, err));
    if (!(scalar > 0) || !isfinite(scalar))
        return nc_fail(err, NC_ERR_RANGE, "%s: query_pre_attn_scalar %g must be > 0", what, scalar);
    c->query_pre_attn_scalar = (float)scalar;
    NC_TRY(read_cap(t, "final_logit_softcapping", &c->final_softcap, what, err));
    /* Read for its type only: transformers' Gemma3Attention keeps it but
     * never passes it to the attention, so it changes nothing there. */
    float unused = 0;
    NC_TRY(read_cap(t, "attn_logit_softcapping", &unused, what, err));
    c->qk_norm = 1;
    c->act = QWEN3_ACT_GELU_TANH;
    c->norm_plus_one = 1;
    c->sandwich_norm = 1;
    c->embed_scale = (float)sqrt((double)c->hidden_size);
    return NC_OK;
}

nc_status gemma3_config_from_json(const json_t *o, qwen3_config *c, const char *what,
                                  nc_error *err) {
    memset(c, 0, sizeof *c);
    if (!json_is_object(o)) return nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", what);
    const char *type = NULL;
    NC_TRY(nc_json_str(o, "model_type", &type, 1, what, err));
    if (!strcmp(type, "gemma3_text")) {
        NC_TRY(read_text(o, c, what, err));
    } else if (!strcmp(type, "gemma3")) {
        const json_t *t = json_object_get(o, "text_config");
        char sub[600];
        snprintf(sub, sizeof sub, "%s: text_config", what);
        if (!json_is_object(t))
            return nc_fail(err, NC_ERR_FORMAT, "%s: field 'text_config' must be an object", what);
        NC_TRY(read_text(t, c, sub, err));
        c->multimodal = 1;
        /* Gemma3ForConditionalGeneration applies no final softcap; the
         * top level's tie and eos ids count */
        c->final_softcap = 0;
        NC_TRY(nc_json_bool(o, "tie_word_embeddings", &c->tie_word_embeddings, 0, what, err));
        NC_TRY(hf_config_read_eos(o, c->vocab_size, c->eos_token_ids, &c->n_eos, QWEN3_MAX_EOS,
                                  what, err));
    } else {
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: model_type '%s' is not supported (this reader takes 'gemma3_text' or "
                       "'gemma3')",
                       what, type);
    }
    if (c->n_eos == 0) c->eos_token_ids[c->n_eos++] = GEMMA3_EOS;
    return NC_OK;
}
