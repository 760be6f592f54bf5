/* Llama config.json (llama_config.h). LlamaConfig's defaults where a field
 * is absent (transformers' configuration_llama.py). */
#include <string.h>

#include "models/llama_config.h"

#include "base/json.h"
#include "models/hf_config.h"
#include "models/qwen3_config.h"

static nc_status check_supported(const json_t *o, const char *what, nc_error *err) {
    NC_TRY(hf_config_check_type(o, "llama", what, err));
    static const char *const biases[] = {"attention_bias", "mlp_bias"};
    for (int i = 0; i < 2; i++) {
        int flag = 0;
        NC_TRY(nc_json_bool(o, biases[i], &flag, 0, what, err));
        if (flag)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: %s is not supported", what, biases[i]);
    }
    return NC_OK;
}

nc_status llama_config_from_json(const json_t *o, qwen3_config *c, const char *what,
                                 nc_error *err) {
    memset(c, 0, sizeof *c);
    if (!json_is_object(o)) return nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", what);
    NC_TRY(check_supported(o, what, err));
    c->vocab_size = 32000;
    c->max_position_embeddings = 2048;
    c->rms_norm_eps = 1e-6f;
    c->rope_theta = 10000.0f;
    c->qk_norm = 0;
    return qwen3_config_read_shape(o, c, 1, what, err);
}

json_t *llama_config_to_json(const qwen3_config *c) {
    json_t *o = qwen3_config_to_json(c);
    if (!o) return NULL;
    json_object_set_new(o, "model_type", json_string("llama"));
    const rope_scaling *s = &c->rope_scaling;
    if (s->factor > 0)
        json_object_set_new(o, "rope_scaling",
                            json_pack("{s:f, s:f, s:f, s:i, s:s}", "factor", (double)s->factor,
                                      "low_freq_factor", (double)s->low_freq_factor,
                                      "high_freq_factor", (double)s->high_freq_factor,
                                      "original_max_position_embeddings", s->original_max_pos,
                                      "rope_type", "llama3"));
    return o;
}
