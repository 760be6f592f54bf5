/* Random Qwen3.5 folders (model_random.h) in the text-only layout
 * (Qwen3_5ForCausalLM, model_type qwen3_5_text): matrices N(0, 0.02); the
 * (1 + w) RMSNorms' w and A_log, dt_bias N(0, 0.02) (decays near
 * exp(-softplus(0)) per token), the gated norm 1 + N(0, 0.02); every 4th
 * layer full attention with RoPE on a quarter of head_dim, as the
 * published models. For benchmarks: the shapes are real, the text is not. */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/pool.h"
#include "io/hf_weights.h"
#include "models/model_random.h"

#define CONV_K 4
#define FULL_EVERY 4

static void add(st_random_plan *p, const char *name, st_dtype dt, int64_t d0, int64_t d1,
                int base_one) {
    st_random_add(p, name, dt, d0, d1, base_one);
}

static void plan_tensors(st_random_plan *p, const model_preset *s, st_dtype dt) {
    int64_t d = s->hidden, qd = (int64_t)s->heads * s->head_dim,
            kvd = (int64_t)s->kv_heads * s->head_dim, ff = s->intermediate;
    int64_t dk = s->lin_head_dim, nv = s->lin_v_heads, vd = nv * dk;
    int64_t cd = 2 * (int64_t)s->lin_k_heads * dk + vd;
    add(p, "model.embed_tokens.weight", dt, s->vocab, d, 0);
    char n[96];
    for (int l = 0; l < s->layers; l++) {
#define T(suffix, a, b, one)                                                                       \
    (snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), add(p, n, dt, a, b, one))
        T("input_layernorm.weight", d, 0, 0);
        T("post_attention_layernorm.weight", d, 0, 0);
        T("mlp.gate_proj.weight", ff, d, 0);
        T("mlp.up_proj.weight", ff, d, 0);
        T("mlp.down_proj.weight", d, ff, 0);
        if ((l + 1) % FULL_EVERY == 0) {
            T("self_attn.q_proj.weight", 2 * qd, d, 0); /* query and output gate */
            T("self_attn.k_proj.weight", kvd, d, 0);
            T("self_attn.v_proj.weight", kvd, d, 0);
            T("self_attn.o_proj.weight", d, qd, 0);
            T("self_attn.q_norm.weight", s->head_dim, 0, 0);
            T("self_attn.k_norm.weight", s->head_dim, 0, 0);
        } else {
            T("linear_attn.in_proj_qkv.weight", cd, d, 0);
            T("linear_attn.in_proj_z.weight", vd, d, 0);
            T("linear_attn.in_proj_b.weight", nv, d, 0);
            T("linear_attn.in_proj_a.weight", nv, d, 0);
            T("linear_attn.out_proj.weight", d, vd, 0);
            T("linear_attn.conv1d.weight", cd, CONV_K, 0);
            p->t[p->n - 1].ndim = 3; /* [conv_dim, 1, K]: the same values */
            p->t[p->n - 1].shape[1] = 1;
            p->t[p->n - 1].shape[2] = CONV_K;
            T("linear_attn.A_log", nv, 0, 0);
            T("linear_attn.dt_bias", nv, 0, 0);
            T("linear_attn.norm.weight", dk, 0, 1);
        }
#undef T
    }
    add(p, "model.norm.weight", dt, d, 0, 0);
    if (!s->tied) add(p, "lm_head.weight", dt, s->vocab, d, 0);
}

static json_t *config_json(const model_preset *s, st_dtype dt) {
    json_t *types = json_array();
    for (int l = 0; l < s->layers; l++)
        json_array_append_new(
            types, json_string((l + 1) % FULL_EVERY ? "linear_attention" : "full_attention"));
    return json_pack(
        "{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:o, s:i, s:f, "
        "s:b, s:i, s:i, s:s, s:b, s:s, s:{s:s, s:f, s:f, s:[i,i,i], s:b}}",
        "architectures", "Qwen3_5ForCausalLM", "model_type", "qwen3_5_text", "vocab_size", s->vocab,
        "hidden_size", s->hidden, "intermediate_size", s->intermediate, "num_hidden_layers",
        s->layers, "num_attention_heads", s->heads, "num_key_value_heads", s->kv_heads, "head_dim",
        s->head_dim, "linear_num_key_heads", s->lin_k_heads, "linear_num_value_heads",
        s->lin_v_heads, "linear_key_head_dim", s->lin_head_dim, "linear_value_head_dim",
        s->lin_head_dim, "linear_conv_kernel_dim", CONV_K, "layer_types", types,
        "max_position_embeddings", s->max_pos, "rms_norm_eps", 1e-6, "tie_word_embeddings", s->tied,
        "bos_token_id", s->bos, "eos_token_id", s->eos, "hidden_act", "silu", "attention_bias", 0,
        "torch_dtype", model_random_torch_dtype(dt), "rope_parameters", "rope_type", "default",
        "rope_theta", s->rope_theta, "partial_rotary_factor", 0.25, "mrope_section", 11, 11, 10,
        "mrope_interleaved", 1);
}

nc_status qwen35_random_write(const model_preset *s, const char *out, const model_random_options *o,
                              model_random_report *r, nc_error *err) {
    return model_random_write_decoder(s, out, o, plan_tensors, config_json, r, err);
}
