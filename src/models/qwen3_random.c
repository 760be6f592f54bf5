/* Random folders of the Qwen3 layout (model_random.h): Qwen3, Llama (no
 * q/k norms; model_type "llama" and Llama 3's rope_scaling where the
 * preset has it) and Gemma 3 (model_type "gemma3_text", four norms a layer,
 * its sliding window and two RoPE bases). Matrices N(0, 0.02) (Irwin-Hall
 * approximation), norms 1 + N(0, 0.02) (Gemma's, stored as w, then scale
 * by about 2); config.json through the one Qwen3 config writer
 * (qwen3_config.h) plus the fields transformers expects; weights in one
 * file up to 4 GB, else in shards with an index, as HF does. */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/pool.h"
#include "io/hf_weights.h"
#include "io/safetensors_random.h"
#include "models/model_random.h"
#include "models/qwen3_config.h"

static void add_tensor(st_random_plan *p, const char *name, st_dtype dt, int64_t d0, int64_t d1) {
    st_random_add(p, name, dt, d0, d1, d1 == 0);
}

static void plan_tensors(st_random_plan *p, const model_preset *s, st_dtype dt) {
    int64_t d = s->hidden, qd = (int64_t)s->heads * s->head_dim,
            kvd = (int64_t)s->kv_heads * s->head_dim;
    add_tensor(p, "model.embed_tokens.weight", dt, s->vocab, d);
    char n[96];
    for (int l = 0; l < s->layers; l++) {
#define T(suffix, a, b)                                                                            \
    (snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), add_tensor(p, n, dt, a, b))
        T("input_layernorm.weight", d, 0);
        T("self_attn.q_proj.weight", qd, d);
        T("self_attn.k_proj.weight", kvd, d);
        T("self_attn.v_proj.weight", kvd, d);
        T("self_attn.o_proj.weight", d, qd);
        if (s->family == MODEL_FAMILY_QWEN3) {
            T("self_attn.q_norm.weight", s->head_dim, 0);
            T("self_attn.k_norm.weight", s->head_dim, 0);
        }
        T("post_attention_layernorm.weight", d, 0);
        if (s->family == MODEL_FAMILY_GEMMA3) {
            T("self_attn.q_norm.weight", s->head_dim, 0);
            T("self_attn.k_norm.weight", s->head_dim, 0);
            T("pre_feedforward_layernorm.weight", d, 0);
            T("post_feedforward_layernorm.weight", d, 0);
        }
        T("mlp.gate_proj.weight", s->intermediate, d);
        T("mlp.up_proj.weight", s->intermediate, d);
        T("mlp.down_proj.weight", d, s->intermediate);
#undef T
    }
    add_tensor(p, "model.norm.weight", dt, d, 0);
    if (!s->tied) add_tensor(p, "lm_head.weight", dt, s->vocab, d);
}

/* The preset as the config the loader will read back. */
static void preset_config(const model_preset *s, qwen3_config *c) {
    memset(c, 0, sizeof *c);
    c->vocab_size = s->vocab;
    c->hidden_size = s->hidden;
    c->intermediate_size = s->intermediate;
    c->num_hidden_layers = s->layers;
    c->num_attention_heads = s->heads;
    c->num_key_value_heads = s->kv_heads;
    c->head_dim = s->head_dim;
    c->max_position_embeddings = s->max_pos;
    c->rms_norm_eps = s->family == MODEL_FAMILY_LLAMA ? 1e-5f : 1e-6f;
    c->rope_theta = (float)s->rope_theta;
    c->tie_word_embeddings = s->tied;
    c->bos_token_id = s->bos;
    c->eos_token_ids[c->n_eos++] = s->eos;
}

/* Llama's own fields: its type, and Llama 3's RoPE scaling. */
static void llama_fields(const model_preset *s, json_t *o) {
    json_object_set_new(o, "model_type", json_string("llama"));
    json_object_set_new(o, "architectures", json_pack("[s]", "LlamaForCausalLM"));
    json_object_set_new(o, "mlp_bias", json_false());
    json_object_set_new(o, "pretraining_tp", json_integer(1));
    json_object_set_new(o, "rope_scaling",
                        s->rope_llama3_factor > 0
                            ? json_pack("{s:f, s:f, s:f, s:i, s:s}", "factor",
                                        (double)s->rope_llama3_factor, "low_freq_factor", 1.0,
                                        "high_freq_factor", 4.0,
                                        "original_max_position_embeddings", 8192, "rope_type",
                                        "llama3")
                            : json_null());
}

/* Gemma 3's fields, as google/gemma-3-1b-it's config.json spells them
 * (transformers 5's layer_types beside the hub's pattern). */
static void gemma3_fields(const model_preset *s, json_t *o) {
    json_object_set_new(o, "model_type", json_string("gemma3_text"));
    json_object_set_new(o, "architectures", json_pack("[s]", "Gemma3ForCausalLM"));
    json_object_del(o, "hidden_act");
    json_object_set_new(o, "hidden_activation", json_string("gelu_pytorch_tanh"));
    json_object_set_new(o, "query_pre_attn_scalar", json_integer(s->head_dim));
    json_object_set_new(o, "rope_local_base_freq", json_real(s->rope_theta_local));
    json_object_set_new(o, "sliding_window", json_integer(s->sliding_window));
    json_object_set_new(o, "sliding_window_pattern", json_integer(6));
    json_t *types = json_array();
    for (int l = 0; l < s->layers; l++)
        json_array_append_new(types,
                              json_string((l + 1) % 6 ? "sliding_attention" : "full_attention"));
    json_object_set_new(o, "layer_types", types);
    json_object_set_new(o, "final_logit_softcapping", json_null());
    json_object_set_new(o, "attn_logit_softcapping", json_null());
    json_object_set_new(o, "pad_token_id", json_integer(s->pad));
    json_object_set_new(o, "use_bidirectional_attention", json_false());
}

static json_t *config_json(const model_preset *s, st_dtype dt) {
    qwen3_config c;
    preset_config(s, &c);
    json_t *o = qwen3_config_to_json(&c);
    if (!o) return NULL;
    json_object_set_new(o, "architectures", json_pack("[s]", "Qwen3ForCausalLM"));
    json_object_set_new(o, "rope_scaling", json_null());
    json_object_set_new(o, "attention_bias", json_false());
    json_object_set_new(o, "attention_dropout", json_real(0.0));
    json_object_set_new(o, "hidden_act", json_string("silu"));
    json_object_set_new(o, "initializer_range", json_real(0.02));
    json_object_set_new(o, "max_window_layers", json_integer(s->layers));
    json_object_set_new(o, "sliding_window", json_null());
    json_object_set_new(o, "torch_dtype", json_string(model_random_torch_dtype(dt)));
    json_object_set_new(o, "use_cache", json_true());
    json_object_set_new(o, "use_sliding_window", json_false());
    if (s->family != MODEL_FAMILY_QWEN3) {
        json_object_del(o, "max_window_layers");
        json_object_del(o, "sliding_window");
        json_object_del(o, "use_sliding_window");
    }
    if (s->family == MODEL_FAMILY_LLAMA) llama_fields(s, o);
    if (s->family == MODEL_FAMILY_GEMMA3) gemma3_fields(s, o);
    return o;
}

nc_status qwen3_random_write(const model_preset *s, const char *out, const model_random_options *o,
                             model_random_report *r, nc_error *err) {
    return model_random_write_decoder(s, out, o, plan_tensors, config_json, r, err);
}
