/* config.json parsing: the shapes transformers 4.x and 5.x write (rope_theta
 * or rope_parameters, eos as an int or a list merged with
 * generation_config.json, head_dim present or derived) give the same
 * qwen3_config; real Qwen3-0.6B's config (verbatim fields) parses. */
#include <sys/stat.h>

#include "../test.h"
#include "base/mmap.h"
#include "models/qwen3.h"

#define DIR_ "build/test_qwen3_config"

static nc_status load_cfg(const char *config, const char *gen, qwen3_config *c, nc_error *err) {
    mkdir("build", 0777);
    mkdir(DIR_, 0777);
    remove(DIR_ "/generation_config.json");
    NC_TRY(nc_write_file_atomic(DIR_ "/config.json", config, strlen(config), err));
    if (gen) NC_TRY(nc_write_file_atomic(DIR_ "/generation_config.json", gen, strlen(gen), err));
    return qwen3_config_load(DIR_, c, err);
}

/* Qwen3-0.6B's config.json fields as published (transformers 4.51). */
static const char *qwen3_06b =
    "{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false, "
    "\"attention_dropout\": 0.0, \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
    "\"head_dim\": 128, \"hidden_act\": \"silu\", \"hidden_size\": 1024, "
    "\"initializer_range\": 0.02, \"intermediate_size\": 3072, \"max_position_embeddings\": 40960, "
    "\"max_window_layers\": 28, \"model_type\": \"qwen3\", \"num_attention_heads\": 16, "
    "\"num_hidden_layers\": 28, \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-06, "
    "\"rope_scaling\": null, \"rope_theta\": 1000000, \"sliding_window\": null, "
    "\"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", "
    "\"transformers_version\": \"4.51.0\", \"use_cache\": true, \"use_sliding_window\": false, "
    "\"vocab_size\": 151936}";

static void test_real_qwen3_06b_config(void) {
    qwen3_config c;
    nc_error err;
    CHECK_OK(load_cfg(qwen3_06b, "{\"eos_token_id\": [151645, 151643], \"bos_token_id\": 151643}",
                      &c, &err),
             &err);
    CHECK(c.hidden_size == 1024 && c.intermediate_size == 3072 && c.num_hidden_layers == 28);
    CHECK(c.num_attention_heads == 16 && c.num_key_value_heads == 8 && c.head_dim == 128);
    CHECK(c.vocab_size == 151936 && c.max_position_embeddings == 40960);
    CHECK(c.rope_theta == 1e6f && c.rms_norm_eps == 1e-6f && c.tie_word_embeddings == 1);
    CHECK(c.bos_token_id == 151643);
    CHECK(c.n_eos == 2 && c.eos_token_ids[0] == 151645 && c.eos_token_ids[1] == 151643);
}

static void test_transformers5_rope_parameters_and_defaults(void) {
    qwen3_config c;
    nc_error err;
    CHECK_OK(load_cfg("{\"model_type\": \"qwen3\", \"vocab_size\": 100, \"hidden_size\": 64, "
                      "\"intermediate_size\": 96, \"num_hidden_layers\": 2, "
                      "\"num_attention_heads\": 4, \"eos_token_id\": [7, 9], "
                      "\"layer_types\": [\"full_attention\", \"full_attention\"], "
                      "\"rope_parameters\": {\"rope_theta\": 5000.0, \"rope_type\": \"default\"}}",
                      NULL, &c, &err),
             &err);
    CHECK(c.rope_theta == 5000.0f);
    CHECK(c.head_dim == 16 && c.num_key_value_heads == 4); /* derived defaults */
    CHECK(c.rms_norm_eps == 1e-6f && c.tie_word_embeddings == 0 && c.bos_token_id == -1);
    CHECK(c.n_eos == 2 && c.eos_token_ids[1] == 9);
}

static void test_rejects_unsupported_variants(void) {
    qwen3_config c;
    nc_error err;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", qwen3_06b);
    memcpy(strstr(buf, "\"use_sliding_window\": false"), "\"use_sliding_window\":  true", 27);
    CHECK(load_cfg(buf, NULL, &c, &err) == NC_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "use_sliding_window") != NULL);
    CHECK(load_cfg("{\"model_type\": \"qwen2\", \"vocab_size\": 1}", NULL, &c, &err) ==
          NC_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "model_type 'qwen2'") != NULL);
    CHECK(load_cfg("{\"vocab_size\": 1}", NULL, &c, &err) == NC_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "config.json: missing field 'model_type'") != NULL);
    CHECK(load_cfg("{\"model_type\": \"qwen3\", \"vocab_size\": 100, \"hidden_size\": 64, "
                   "\"intermediate_size\": 96, \"num_hidden_layers\": 2, "
                   "\"num_attention_heads\": 4, \"head_dim\": 15}",
                   NULL, &c, &err) == NC_ERR_FORMAT);
    CHECK(strstr(err.msg, "head_dim 15 must be even") != NULL);
    CHECK(load_cfg("{\"model_type\": \"qwen3\", \"vocab_size\": 100, \"hidden_size\": -64}", NULL,
                   &c, &err) == NC_ERR_RANGE);
    CHECK(strstr(err.msg, "'hidden_size'") != NULL);
}

int main(void) {
    RUN(test_real_qwen3_06b_config);
    RUN(test_transformers5_rope_parameters_and_defaults);
    RUN(test_rejects_unsupported_variants);
    return nc_test_exit_code();
}
