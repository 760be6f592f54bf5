/* Qwen3.5 config.json (+ generation_config.json) into a qwen35_config. The
 * hub layout (model_type qwen3_5) nests the decoder's fields in text_config;
 * the text-only layout (qwen3_5_text) has them at the top. Defaults are
 * Qwen3_5TextConfig's; the layer pattern comes from layer_types or, in older
 * configs, full_attention_interval (every n-th layer full attention).
 * Anything this engine would compute differently is refused naming the
 * field: MoE variants, biases, RoPE scaling. */
#include <string.h>

#include "base/json.h"
#include "cpu/cpu_delta.h"
#include "io/hf_weights.h"
#include "models/hf_config.h"
#include "models/qwen35.h"

#define MAX_DIM (1 << 20)
#define MAX_VOCAB (1 << 24)

static nc_status read_eos(const json_t *o, qwen35_config *c, const char *what, nc_error *err) {
    return hf_config_read_eos(o, c->vocab_size, c->eos_token_ids, &c->n_eos, QWEN35_MAX_EOS, what,
                              err);
}

/* rope_parameters (transformers 5) or top-level rope_theta /
 * partial_rotary_factor (older configs). mrope_section is accepted: with
 * text only, all three position rows are the token's position, so every
 * section rotates by the same angle and mRoPE is plain RoPE. */
static nc_status read_rope(const json_t *o, qwen35_config *c, const char *what, nc_error *err) {
    double theta = 10000.0, partial = 0.25; /* Qwen3_5TextConfig's defaults */
    NC_TRY(hf_config_read_rope(o, &theta, &partial, NULL, what, err));
    if (!(partial > 0.0 && partial <= 1.0))
        return nc_fail(err, NC_ERR_RANGE, "%s: partial_rotary_factor %g must be in (0, 1]", what,
                       partial);
    c->rope_theta = (float)theta;
    c->rotary_dim = (int)(c->head_dim * partial); /* int() as HF */
    if (c->rotary_dim < 2 || c->rotary_dim % 2)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: head_dim %d x partial_rotary_factor %g gives %d rotary dims (must be "
                       "even and >= 2)",
                       what, c->head_dim, partial, c->rotary_dim);
    return NC_OK;
}

static nc_status read_layer_types(const json_t *o, qwen35_config *c, const char *what,
                                  nc_error *err) {
    const json_t *lt = json_object_get(o, "layer_types");
    c->n_full = 0;
    if (lt && !json_is_null(lt)) {
        if (!json_is_array(lt) || (int)json_array_size(lt) != c->num_hidden_layers)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: layer_types must list num_hidden_layers (%d) entries", what,
                           c->num_hidden_layers);
        for (int l = 0; l < c->num_hidden_layers; l++) {
            const char *s = json_string_value(json_array_get(lt, (size_t)l));
            if (!s || (strcmp(s, "full_attention") && strcmp(s, "linear_attention")))
                return nc_fail(err, NC_ERR_UNSUPPORTED,
                               "%s: layer_types[%d] is not 'full_attention' or 'linear_attention'",
                               what, l);
            c->is_full[l] = !strcmp(s, "full_attention");
            c->n_full += c->is_full[l];
        }
        return NC_OK;
    }
    int interval = 4;
    NC_TRY(nc_json_int_in(o, "full_attention_interval", &interval, 0, 1, 4096, what, err));
    for (int l = 0; l < c->num_hidden_layers; l++) {
        c->is_full[l] = (l + 1) % interval == 0;
        c->n_full += c->is_full[l];
    }
    return NC_OK;
}

static nc_status check_supported(const json_t *o, const char *what, nc_error *err) {
    const char *act = "silu";
    NC_TRY(nc_json_str(o, "hidden_act", &act, 0, what, err));
    if (strcmp(act, "silu"))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: hidden_act '%s' is not supported (silu)", what,
                       act);
    int flag = 0;
    NC_TRY(nc_json_bool(o, "attention_bias", &flag, 0, what, err));
    if (flag) return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: attention_bias is not supported", what);
    return NC_OK;
}

static nc_status parse_text(const json_t *o, qwen35_config *c, const char *what, nc_error *err) {
    if (!json_is_object(o)) return nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", what);
    NC_TRY(check_supported(o, what, err));
    NC_TRY(nc_json_int_in(o, "vocab_size", &c->vocab_size, 1, 1, MAX_VOCAB, what, err));
    NC_TRY(nc_json_int_in(o, "hidden_size", &c->hidden_size, 1, 1, MAX_DIM, what, err));
    NC_TRY(nc_json_int_in(o, "intermediate_size", &c->intermediate_size, 1, 1, MAX_DIM, what, err));
    NC_TRY(nc_json_int_in(o, "num_hidden_layers", &c->num_hidden_layers, 1, 1, QWEN35_MAX_LAYERS,
                          what, err));
    NC_TRY(hf_config_read_heads(o, &c->num_attention_heads, &c->num_key_value_heads, what, err));
    c->head_dim = 256;
    NC_TRY(nc_json_int_in(o, "head_dim", &c->head_dim, 0, 2, 65536, what, err));
    if ((int64_t)c->head_dim * c->num_attention_heads * 2 > MAX_DIM)
        return nc_fail(err, NC_ERR_RANGE, "%s: num_attention_heads x head_dim is too large", what);
    c->linear_conv_kernel_dim = 4;
    c->linear_key_head_dim = c->linear_value_head_dim = 128;
    c->linear_num_key_heads = 16;
    c->linear_num_value_heads = 32;
    NC_TRY(nc_json_int_in(o, "linear_conv_kernel_dim", &c->linear_conv_kernel_dim, 0, 1,
                          CPU_CONV_MAX_HIST + 1, what, err));
    NC_TRY(
        nc_json_int_in(o, "linear_key_head_dim", &c->linear_key_head_dim, 0, 1, 4096, what, err));
    NC_TRY(nc_json_int_in(o, "linear_value_head_dim", &c->linear_value_head_dim, 0, 1,
                          CPU_DELTA_MAX_DV, what, err));
    NC_TRY(
        nc_json_int_in(o, "linear_num_key_heads", &c->linear_num_key_heads, 0, 1, 4096, what, err));
    NC_TRY(nc_json_int_in(o, "linear_num_value_heads", &c->linear_num_value_heads, 0, 1, 4096, what,
                          err));
    if (c->linear_num_value_heads % c->linear_num_key_heads)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: linear_num_value_heads %d is not a multiple of linear_num_key_heads %d",
                       what, c->linear_num_value_heads, c->linear_num_key_heads);
    if ((int64_t)c->linear_num_value_heads * c->linear_value_head_dim > MAX_DIM ||
        (int64_t)c->linear_num_key_heads * c->linear_key_head_dim > MAX_DIM)
        return nc_fail(err, NC_ERR_RANGE, "%s: linear-attention heads are too large", what);
    c->max_position_embeddings = 32768;
    NC_TRY(nc_json_int_in(o, "max_position_embeddings", &c->max_position_embeddings, 0, 1, 1 << 24,
                          what, err));
    double eps = 1e-6;
    NC_TRY(nc_json_num(o, "rms_norm_eps", &eps, 0, what, err));
    if (!(eps > 0 && eps < 1))
        return nc_fail(err, NC_ERR_RANGE, "%s: rms_norm_eps %g must be in (0, 1)", what, eps);
    c->rms_norm_eps = (float)eps;
    NC_TRY(read_rope(o, c, what, err));
    NC_TRY(read_layer_types(o, c, what, err));
    NC_TRY(nc_json_bool(o, "tie_word_embeddings", &c->tie_word_embeddings, 0, what, err));
    int64_t bos = -1;
    NC_TRY(nc_json_int(o, "bos_token_id", &bos, 0, what, err));
    c->bos_token_id = (bos >= 0 && bos < c->vocab_size) ? (int32_t)bos : -1;
    return read_eos(o, c, what, err);
}

/* The decoder's fields of either layout; refuses MoE and non-Qwen3.5 types. */
static nc_status parse_config(const json_t *root, qwen35_config *c, const char *path,
                              nc_error *err) {
    if (!json_is_object(root)) return nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", path);
    const char *type = NULL;
    NC_TRY(nc_json_str(root, "model_type", &type, 1, path, err));
    if (!strncmp(type, "qwen3_5_moe", 11))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: model_type '%s' (Qwen3.5 mixture of experts) is not supported; this "
                       "engine runs the dense qwen3_5 models",
                       path, type);
    if (!strcmp(type, "qwen3_5_text")) return parse_text(root, c, path, err);
    if (strcmp(type, "qwen3_5"))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: model_type '%s' is not a Qwen3.5 model", path,
                       type);
    const json_t *tc = json_object_get(root, "text_config");
    if (!json_is_object(tc))
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: model_type 'qwen3_5' needs a text_config object (the language model)",
                       path);
    char what[600];
    snprintf(what, sizeof what, "%s: text_config", path);
    c->is_vl = 1;
    NC_TRY(parse_text(tc, c, what, err));
    /* the outer flag decides tying for the multimodal class */
    NC_TRY(nc_json_bool(root, "tie_word_embeddings", &c->tie_word_embeddings, 0, path, err));
    return read_eos(root, c, path, err);
}

/* hf_config_load_dir's parts. */
static nc_status config_part(const json_t *o, void *c, const char *what, nc_error *err) {
    return parse_config(o, c, what, err);
}

static nc_status generation_part(const json_t *o, void *c, const char *what, nc_error *err) {
    return read_eos(o, c, what, err);
}

nc_status qwen35_config_load(const char *dir, qwen35_config *cfg, nc_error *err) {
    memset(cfg, 0, sizeof *cfg);
    return hf_config_load_dir(dir, config_part, generation_part, cfg, err);
}

int qwen35_is_qwen35_dir(const char *dir) {
    char path[4096];
    hf_path_join(path, sizeof path, dir, "config.json");
    json_t *root;
    nc_error err;
    if (nc_json_load_file(path, &root, &err) != NC_OK) return 0;
    const json_t *t = json_object_get(root, "model_type");
    int yes = json_is_string(t) && !strncmp(json_string_value(t), "qwen3_5", 7);
    json_decref(root);
    return yes;
}

void qwen35_config_shape(const qwen35_config *c, qwen3_config *s) {
    memset(s, 0, sizeof *s);
    s->vocab_size = c->vocab_size;
    s->hidden_size = c->hidden_size;
    s->intermediate_size = c->intermediate_size;
    s->num_hidden_layers = c->num_hidden_layers;
    s->num_attention_heads = c->num_attention_heads;
    s->num_key_value_heads = c->num_key_value_heads;
    s->head_dim = c->head_dim;
    s->max_position_embeddings = c->max_position_embeddings;
    s->rms_norm_eps = c->rms_norm_eps;
    s->rope_theta = c->rope_theta;
    s->tie_word_embeddings = c->tie_word_embeddings;
    s->bos_token_id = c->bos_token_id;
    s->n_eos = c->n_eos < QWEN3_MAX_EOS ? c->n_eos : QWEN3_MAX_EOS;
    for (int i = 0; i < s->n_eos; i++)
        s->eos_token_ids[i] = c->eos_token_ids[i];
}
