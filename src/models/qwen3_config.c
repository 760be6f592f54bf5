/* Qwen3 config.json (+ generation_config.json) into a qwen3_config. Accepts
 * what transformers 4.x and 5.x write (top-level `rope_theta` or
 * `rope_parameters`, eos as an int or a list) and rejects, naming the field,
 * anything this engine would compute differently (other model types, biases,
 * sliding windows, RoPE scaling). */
#include <string.h>

#include "models/qwen3_config.h"

#include "base/json.h"
#include "models/hf_config.h"

#define MAX_DIM (1 << 20)
#define MAX_VOCAB (1 << 24)

static nc_status read_eos(const json_t *o, qwen3_config *c, const char *what, nc_error *err) {
    return hf_config_read_eos(o, c->vocab_size, c->eos_token_ids, &c->n_eos, QWEN3_MAX_EOS, what,
                              err);
}

static nc_status read_rope(const json_t *o, qwen3_config *c, int allow_llama3, const char *what,
                           nc_error *err) {
    double theta = c->rope_theta;
    NC_TRY(hf_config_read_rope(o, &theta, NULL, allow_llama3 ? &c->rope_scaling : NULL, what,
                               err));
    c->rope_theta = (float)theta;
    return NC_OK;
}

static nc_status check_supported(const json_t *o, const char *what, nc_error *err) {
    NC_TRY(hf_config_check_type(o, "qwen3", what, err));
    int flag = 0;
    NC_TRY(nc_json_bool(o, "attention_bias", &flag, 0, what, err));
    if (flag) return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: attention_bias is not supported", what);
    flag = 0;
    NC_TRY(nc_json_bool(o, "use_sliding_window", &flag, 0, what, err));
    if (flag)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: use_sliding_window is not supported", what);
    const json_t *lt = json_object_get(o, "layer_types");
    size_t i;
    const json_t *e;
    if (json_is_array(lt)) json_array_foreach(lt, i, e) {
            if (!json_is_string(e) || strcmp(json_string_value(e), "full_attention"))
                return nc_fail(err, NC_ERR_UNSUPPORTED,
                               "%s: layer_types[%zu] is not 'full_attention'", what, i);
        }
    return NC_OK;
}

nc_status qwen3_config_read_shape(const json_t *o, qwen3_config *c, int allow_llama3,
                                  const char *what, nc_error *err) {
    NC_TRY(nc_json_int_in(o, "hidden_size", &c->hidden_size, 1, 1, MAX_DIM, what, err));
    NC_TRY(nc_json_int_in(o, "intermediate_size", &c->intermediate_size, 1, 1, MAX_DIM, what, err));
    NC_TRY(nc_json_int_in(o, "num_hidden_layers", &c->num_hidden_layers, 1, 1, QWEN3_MAX_LAYERS,
                          what, err));
    NC_TRY(hf_config_read_heads(o, &c->num_attention_heads, &c->num_key_value_heads, what, err));
    c->head_dim = c->hidden_size / c->num_attention_heads;
    NC_TRY(nc_json_int_in(o, "head_dim", &c->head_dim, 0, 2, 65536, what, err));
    if (c->head_dim % 2)
        return nc_fail(err, NC_ERR_FORMAT, "%s: head_dim %d must be even (RoPE)", what,
                       c->head_dim);
    if ((int64_t)c->head_dim * c->num_attention_heads > MAX_DIM)
        return nc_fail(err, NC_ERR_RANGE, "%s: num_attention_heads x head_dim is too large", what);
    NC_TRY(nc_json_int_in(o, "vocab_size", &c->vocab_size, 0, 1, MAX_VOCAB, what, err));
    NC_TRY(nc_json_int_in(o, "max_position_embeddings", &c->max_position_embeddings, 0, 1, 1 << 24,
                          what, err));
    double eps = c->rms_norm_eps;
    NC_TRY(nc_json_num(o, "rms_norm_eps", &eps, 0, what, err));
    if (!(eps > 0 && eps < 1))
        return nc_fail(err, NC_ERR_RANGE, "%s: rms_norm_eps %g must be in (0, 1)", what, eps);
    c->rms_norm_eps = (float)eps;
    NC_TRY(read_rope(o, c, allow_llama3, what, err));
    NC_TRY(nc_json_bool(o, "tie_word_embeddings", &c->tie_word_embeddings, 0, what, err));
    int64_t bos = -1;
    NC_TRY(nc_json_int(o, "bos_token_id", &bos, 0, what, err));
    c->bos_token_id = (bos >= 0 && bos < c->vocab_size) ? (int32_t)bos : -1;
    return read_eos(o, c, what, err);
}

nc_status qwen3_config_from_json(const json_t *o, qwen3_config *c, const char *what,
                                 nc_error *err) {
    memset(c, 0, sizeof *c);
    if (!json_is_object(o)) return nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", what);
    NC_TRY(check_supported(o, what, err));
    /* Qwen3Config's defaults */
    c->vocab_size = 151936;
    c->max_position_embeddings = 32768;
    c->rms_norm_eps = 1e-6f;
    c->rope_theta = 10000.0f;
    c->qk_norm = 1;
    return qwen3_config_read_shape(o, c, 0, what, err);
}

nc_status qwen3_config_load_file(const char *path, qwen3_config *c, nc_error *err) {
    json_t *root;
    NC_TRY(nc_json_load_file(path, &root, err));
    nc_status st = qwen3_config_from_json(root, c, path, err);
    json_decref(root);
    return st;
}

json_t *qwen3_config_to_json(const qwen3_config *c) {
    json_t *o = json_object();
    json_object_set_new(o, "model_type", json_string("qwen3"));
    json_object_set_new(o, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(o, "hidden_size", json_integer(c->hidden_size));
    json_object_set_new(o, "intermediate_size", json_integer(c->intermediate_size));
    json_object_set_new(o, "num_hidden_layers", json_integer(c->num_hidden_layers));
    json_object_set_new(o, "num_attention_heads", json_integer(c->num_attention_heads));
    json_object_set_new(o, "num_key_value_heads", json_integer(c->num_key_value_heads));
    json_object_set_new(o, "head_dim", json_integer(c->head_dim));
    json_object_set_new(o, "max_position_embeddings", json_integer(c->max_position_embeddings));
    json_object_set_new(o, "rms_norm_eps", json_real(c->rms_norm_eps));
    json_object_set_new(o, "rope_theta", json_real(c->rope_theta));
    json_object_set_new(o, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
    json_object_set_new(o, "bos_token_id",
                        c->bos_token_id >= 0 ? json_integer(c->bos_token_id) : json_null());
    json_t *eos = json_array();
    for (int i = 0; i < c->n_eos; i++)
        json_array_append_new(eos, json_integer(c->eos_token_ids[i]));
    if (c->n_eos == 1) {
        json_decref(eos);
        eos = json_integer(c->eos_token_ids[0]);
    }
    json_object_set_new(o, "eos_token_id", eos);
    if (!json_is_object(o) || json_object_size(o) != 14) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* hf_config_load_dir's parts: the family's reader, and the eos ids. */
typedef struct load_ctx {
    qwen3_config_reader read;
    qwen3_config *c;
} load_ctx;

static nc_status config_part(const json_t *o, void *p, const char *what, nc_error *err) {
    const load_ctx *l = p;
    return l->read(o, l->c, what, err);
}

static nc_status generation_part(const json_t *o, void *p, const char *what, nc_error *err) {
    return read_eos(o, ((const load_ctx *)p)->c, what, err);
}

nc_status qwen3_config_load_with(const char *dir, qwen3_config_reader read, qwen3_config *cfg,
                                 nc_error *err) {
    memset(cfg, 0, sizeof *cfg);
    load_ctx l = {read, cfg};
    return hf_config_load_dir(dir, config_part, generation_part, &l, err);
}

nc_status qwen3_config_load(const char *dir, qwen3_config *cfg, nc_error *err) {
    return qwen3_config_load_with(dir, qwen3_config_from_json, cfg, err);
}
