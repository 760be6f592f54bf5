/* Gemma 3's config.json through the family table (models/family.h): the
 * 1B instruction model's as published (gemma3_text, the hub's 4.x
 * spelling), the 4B's multimodal one (gemma3, a sparse text_config that
 * leans on Gemma3TextConfig's defaults, linear RoPE scaling) and
 * transformers 5's spelling (layer_types, rope_parameters per layer type)
 * read into the Qwen3 layout's config with Gemma's fields; what this
 * decoder would compute differently is refused naming the field. */
#include "../test.h"
#include "config_edits.h"
#include <math.h>

#define DIR_ "build/test_gemma3_config"

static nc_status load_cfg(const char *config, qwen3_config *c, nc_error *err) {
    return config_edits_load(DIR_, config, c, err);
}

/* google/gemma-3-1b-it's config.json (transformers 4.50). */
static const char *gemma3_1b =
    "{\"architectures\": [\"Gemma3ForCausalLM\"], \"attention_bias\": false, "
    "\"attention_dropout\": 0.0, \"attn_logit_softcapping\": null, \"bos_token_id\": 2, "
    "\"cache_implementation\": \"hybrid\", \"eos_token_id\": [1, 106], "
    "\"final_logit_softcapping\": null, \"head_dim\": 256, "
    "\"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": 1152, "
    "\"initializer_range\": 0.02, \"intermediate_size\": 6912, "
    "\"max_position_embeddings\": 32768, \"model_type\": \"gemma3_text\", "
    "\"num_attention_heads\": 4, \"num_hidden_layers\": 26, \"num_key_value_heads\": 1, "
    "\"pad_token_id\": 0, \"query_pre_attn_scalar\": 256, \"rms_norm_eps\": 1e-06, "
    "\"rope_local_base_freq\": 10000, \"rope_scaling\": null, \"rope_theta\": 1000000, "
    "\"sliding_window\": 512, \"sliding_window_pattern\": 6, \"torch_dtype\": \"bfloat16\", "
    "\"use_cache\": true, \"vocab_size\": 262144}";

static void test_real_gemma3_1b_config(void) {
    qwen3_config c;
    nc_error err;
    CHECK_OK(load_cfg(gemma3_1b, &c, &err), &err);
    CHECK(c.hidden_size == 1152 && c.intermediate_size == 6912 && c.num_hidden_layers == 26);
    CHECK(c.num_attention_heads == 4 && c.num_key_value_heads == 1 && c.head_dim == 256);
    CHECK(c.vocab_size == 262144 && c.max_position_embeddings == 32768);
    CHECK(c.rope_theta == 1e6f && c.rope_local_theta == 1e4f && c.rope_scaling.factor == 0);
    CHECK(c.rms_norm_eps == 1e-6f && c.tie_word_embeddings == 1 && c.bos_token_id == 2);
    CHECK(c.n_eos == 2 && c.eos_token_ids[0] == 1 && c.eos_token_ids[1] == 106);
    CHECK(c.qk_norm && c.norm_plus_one && c.sandwich_norm && c.act == QWEN3_ACT_GELU_TANH);
    CHECK(c.query_pre_attn_scalar == 256.0f && c.final_softcap == 0 && !c.multimodal);
    CHECK(c.embed_scale == (float)sqrt(1152.0) && c.sliding_window == 512);
    int global = 0;
    for (int l = 0; l < 26; l++)
        if (!qwen3_layer_sliding(&c, l)) {
            CHECKF(l % 6 == 5, "layer %d is global", l);
            global++;
        }
    CHECK(global == 4); /* 5, 11, 17, 23 */
}

/* google/gemma-3-4b-it's config.json, its text_config as published: most
 * fields are Gemma3TextConfig's defaults (vocab 262208, eps, thetas). */
static void test_multimodal_4b_config_with_defaults(void) {
    qwen3_config c;
    nc_error err;
    CHECK_OK(load_cfg("{\"architectures\": [\"Gemma3ForConditionalGeneration\"], "
                      "\"boi_token_index\": 255999, \"eoi_token_index\": 256000, "
                      "\"eos_token_id\": [1, 106], \"image_token_index\": 262144, "
                      "\"mm_tokens_per_image\": 256, \"model_type\": \"gemma3\", "
                      "\"text_config\": {\"hidden_size\": 2560, \"intermediate_size\": 10240, "
                      "\"model_type\": \"gemma3_text\", \"num_attention_heads\": 8, "
                      "\"num_hidden_layers\": 34, \"num_key_value_heads\": 4, "
                      "\"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, "
                      "\"sliding_window\": 1024}, \"vision_config\": {\"hidden_size\": 1152, "
                      "\"model_type\": \"siglip_vision_model\"}}",
                      &c, &err),
             &err);
    CHECK(c.multimodal && c.vocab_size == 262208 && c.head_dim == 256);
    CHECK(c.max_position_embeddings == 131072 && c.query_pre_attn_scalar == 256.0f);
    CHECK(c.rope_scaling.linear && c.rope_scaling.factor == 8.0f && c.rope_theta == 1e6f);
    CHECK(c.rope_local_theta == 1e4f && c.sliding_window == 1024 && c.tie_word_embeddings);
    CHECK(c.bos_token_id == 2 && c.n_eos == 2 && c.eos_token_ids[0] == 1);
    CHECK(qwen3_layer_sliding(&c, 4) && !qwen3_layer_sliding(&c, 5));
}

/* transformers 5's spelling: layer_types win over any pattern, RoPE per
 * layer type in rope_parameters. */
static void test_transformers5_spelling(void) {
    qwen3_config c;
    nc_error err;
    CHECK_OK(load_cfg("{\"model_type\": \"gemma3_text\", \"hidden_size\": 64, "
                      "\"intermediate_size\": 96, \"num_hidden_layers\": 3, "
                      "\"num_attention_heads\": 2, \"head_dim\": 32, \"vocab_size\": 100, "
                      "\"layer_types\": [\"full_attention\", \"sliding_attention\", "
                      "\"full_attention\"], \"sliding_window\": 7, "
                      "\"_sliding_window_pattern\": 6, \"final_logit_softcapping\": 30.0, "
                      "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"linear\", "
                      "\"factor\": 2.0, \"rope_theta\": 500000.0}, \"sliding_attention\": "
                      "{\"rope_type\": \"default\", \"rope_theta\": 20000.0}}}",
                      &c, &err),
             &err);
    CHECK(!qwen3_layer_sliding(&c, 0) && qwen3_layer_sliding(&c, 1) && !qwen3_layer_sliding(&c, 2));
    CHECK(c.sliding_window == 7 && c.final_softcap == 30.0f && c.rope_theta == 5e5f);
    CHECK(c.rope_local_theta == 2e4f && c.rope_scaling.linear && c.rope_scaling.factor == 2.0f);
}

/* One edit of the 1B config that must fail with code and a message
 * naming the field. */
static int fails_with(const char *from, const char *to, nc_status code, const char *want) {
    return config_edits_fail(DIR_, gemma3_1b, from, to, code, want);
}

static void test_rejects_what_the_decoder_would_compute_differently(void) {
    static const struct {
        const char *from, *to;
        nc_status code;
        const char *want;
    } edits[] = {
        {"\"attention_bias\": false", "\"attention_bias\": true", NC_ERR_UNSUPPORTED,
         "attention_bias is not supported"},
        {"\"hidden_activation\": \"gelu_pytorch_tanh\"", "\"hidden_activation\": \"gelu\"",
         NC_ERR_UNSUPPORTED, "hidden_activation 'gelu'"},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"yarn\"}",
         NC_ERR_UNSUPPORTED, "rope_scaling 'yarn' is not supported"},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"linear\"}",
         NC_ERR_NOT_FOUND, "missing field 'factor'"},
        {"\"sliding_window\": 512", "\"sliding_window\": null", NC_ERR_UNSUPPORTED,
         "sliding_window is null"},
        {"\"sliding_window_pattern\": 6", "\"layer_types\": [\"sliding_attention\"]", NC_ERR_FORMAT,
         "layer_types must be a list of num_hidden_layers (26)"},
        {"\"use_cache\": true", "\"use_bidirectional_attention\": true", NC_ERR_UNSUPPORTED,
         "use_bidirectional_attention is not supported"},
        {"\"final_logit_softcapping\": null", "\"final_logit_softcapping\": -1", NC_ERR_RANGE,
         "final_logit_softcapping"},
        {"\"query_pre_attn_scalar\": 256", "\"query_pre_attn_scalar\": 0", NC_ERR_RANGE,
         "query_pre_attn_scalar"},
        {"\"model_type\": \"gemma3_text\"", "\"model_type\": \"gemma2\"", NC_ERR_UNSUPPORTED,
         "model_type 'gemma2' is not supported"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++)
        CHECK(fails_with(edits[i].from, edits[i].to, edits[i].code, edits[i].want));
}

int main(void) {
    RUN(test_real_gemma3_1b_config);
    RUN(test_multimodal_4b_config_with_defaults);
    RUN(test_transformers5_spelling);
    RUN(test_rejects_what_the_decoder_would_compute_differently);
    return nc_test_exit_code();
}
