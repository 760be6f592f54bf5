/* Llama's config.json through the family table (models/family.h): the
 * Llama 3.2 1B config as published (rope_scaling "llama3", tied head) and a
 * SmolLM2-style one (no rope_scaling, no head_dim) read into the Qwen3
 * layout's config without q/k norms; what this decoder would compute
 * differently is refused naming the field. */
#include "../test.h"
#include "config_edits.h"

#define DIR_ "build/test_llama_config"

static nc_status load_cfg(const char *config, qwen3_config *c, nc_error *err) {
    return config_edits_load(DIR_, config, c, err);
}

/* meta-llama/Llama-3.2-1B's config.json fields (transformers 4.45). */
static const char *llama32_1b =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, "
    "\"attention_dropout\": 0.0, \"bos_token_id\": 128000, \"eos_token_id\": 128001, "
    "\"head_dim\": 64, \"hidden_act\": \"silu\", \"hidden_size\": 2048, "
    "\"initializer_range\": 0.02, \"intermediate_size\": 8192, "
    "\"max_position_embeddings\": 131072, \"mlp_bias\": false, \"model_type\": \"llama\", "
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 16, \"num_key_value_heads\": 8, "
    "\"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 32.0, "
    "\"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0, "
    "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}, "
    "\"rope_theta\": 500000.0, \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", "
    "\"use_cache\": true, \"vocab_size\": 128256}";

static void test_real_llama32_1b_config(void) {
    qwen3_config c;
    nc_error err;
    CHECK_OK(load_cfg(llama32_1b, &c, &err), &err);
    CHECK(c.hidden_size == 2048 && c.intermediate_size == 8192 && c.num_hidden_layers == 16);
    CHECK(c.num_attention_heads == 32 && c.num_key_value_heads == 8 && c.head_dim == 64);
    CHECK(c.vocab_size == 128256 && c.max_position_embeddings == 131072);
    CHECK(c.rope_theta == 5e5f && c.rms_norm_eps == 1e-5f && c.tie_word_embeddings == 1);
    CHECK(c.bos_token_id == 128000 && c.n_eos == 1 && c.eos_token_ids[0] == 128001);
    CHECK(c.qk_norm == 0);
    CHECK(c.rope_scaling.factor == 32.0f && c.rope_scaling.low_freq_factor == 1.0f &&
          c.rope_scaling.high_freq_factor == 4.0f && c.rope_scaling.original_max_pos == 8192);
}

/* SmolLM2's shape: LlamaConfig's defaults fill what is absent; plain RoPE. */
static void test_smollm2_style_config(void) {
    qwen3_config c;
    nc_error err;
    CHECK_OK(load_cfg("{\"model_type\": \"llama\", \"hidden_size\": 576, "
                      "\"intermediate_size\": 1536, \"num_hidden_layers\": 30, "
                      "\"num_attention_heads\": 9, \"num_key_value_heads\": 3, "
                      "\"rope_theta\": 100000, \"rope_scaling\": null, \"vocab_size\": 49152, "
                      "\"tie_word_embeddings\": true, \"eos_token_id\": 2}",
                      &c, &err),
             &err);
    CHECK(c.head_dim == 64 && c.max_position_embeddings == 2048 && c.rms_norm_eps == 1e-6f);
    CHECK(c.rope_scaling.factor == 0 && c.rope_theta == 1e5f && c.qk_norm == 0);
    /* transformers 5's spelling of the same scaling */
    CHECK_OK(load_cfg("{\"model_type\": \"llama\", \"hidden_size\": 64, "
                      "\"intermediate_size\": 96, \"num_hidden_layers\": 2, "
                      "\"num_attention_heads\": 4, \"rope_parameters\": {\"rope_type\": "
                      "\"llama3\", \"rope_theta\": 500000.0, \"factor\": 8.0, "
                      "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                      "\"original_max_position_embeddings\": 8192}}",
                      &c, &err),
             &err);
    CHECK(c.rope_scaling.factor == 8.0f && c.rope_theta == 5e5f);
}

/* One edit of the 1B config that must fail with code and a message
 * naming the field. */
static int fails_with(const char *from, const char *to, nc_status code, const char *want) {
    return config_edits_fail(DIR_, llama32_1b, from, to, code, want);
}

static void test_rejects_what_the_decoder_would_compute_differently(void) {
    CHECK(fails_with("\"attention_bias\": false", "\"attention_bias\": true", NC_ERR_UNSUPPORTED,
                     "attention_bias is not supported"));
    CHECK(fails_with("\"mlp_bias\": false", "\"mlp_bias\": true", NC_ERR_UNSUPPORTED,
                     "mlp_bias is not supported"));
    CHECK(fails_with("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", NC_ERR_UNSUPPORTED,
                     "hidden_act 'gelu'"));
    CHECK(fails_with("\"rope_type\": \"llama3\"", "\"rope_type\": \"yarn\"", NC_ERR_UNSUPPORTED,
                     "rope_scaling 'yarn' is not supported"));
    CHECK(fails_with("\"factor\": 32.0, ", "", NC_ERR_NOT_FOUND,
                     "rope_scaling: missing field 'factor'"));
    CHECK(fails_with("\"high_freq_factor\": 4.0", "\"high_freq_factor\": 1.0", NC_ERR_RANGE,
                     "low_freq_factor < high_freq_factor"));
    CHECK(fails_with("\"model_type\": \"llama\"", "\"model_type\": \"mistral\"", NC_ERR_UNSUPPORTED,
                     "model_type 'mistral' is not supported"));
}

int main(void) {
    RUN(test_real_llama32_1b_config);
    RUN(test_smollm2_style_config);
    RUN(test_rejects_what_the_decoder_would_compute_differently);
    return nc_test_exit_code();
}
