/* Gemma 3's config writer (gemma3_config_write.h). What a multimodal
 * checkpoint's top level changes (tie, eos, no final softcap) is already in
 * c, so the text model's object says it all. */
#include "models/gemma3_config_write.h"

#include "models/qwen3_config.h"

json_t *gemma3_config_to_json(const qwen3_config *c) {
    json_t *o = qwen3_config_to_json(c), *types = json_array();
    if (!o || !types) {
        json_decref(o);
        json_decref(types);
        return NULL;
    }
    json_object_set_new(o, "model_type", json_string("gemma3_text"));
    json_object_set_new(o, "hidden_activation", json_string("gelu_pytorch_tanh"));
    json_object_set_new(o, "rope_local_base_freq", json_real(c->rope_local_theta));
    if (c->rope_scaling.factor > 0)
        json_object_set_new(o, "rope_scaling",
                            json_pack("{s:f, s:s}", "factor", (double)c->rope_scaling.factor,
                                      "rope_type", "linear"));
    json_object_set_new(o, "query_pre_attn_scalar", json_real(c->query_pre_attn_scalar));
    json_object_set_new(o, "final_logit_softcapping",
                        c->final_softcap > 0 ? json_real(c->final_softcap) : json_null());
    json_object_set_new(o, "sliding_window", json_integer(c->sliding_window));
    for (int l = 0; l < c->num_hidden_layers; l++)
        json_array_append_new(
            types, json_string(qwen3_layer_sliding(c, l) ? "sliding_attention" : "full_attention"));
    json_object_set_new(o, "layer_types", types);
    return o;
}
