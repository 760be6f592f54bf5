/* Bad or partial Qwen3.5 folders, built under build/test_qwen35_bad/ from
 * the fixtures with one thing changed: qwen35_load fails with one line
 * naming the field or tensor (and frees everything: the ASan run checks).
 * Also the config's layer pattern from full_attention_interval and the
 * Qwen3_5TextConfig defaults. */
#include "../common/model_dir.h"
#include "../test.h"
#include "base/mmap.h"
#include "models/qwen35.h"

#define VL "tests/fixtures/qwen35/tiny_vl_tied"
#define TEXT "tests/fixtures/qwen35/tiny_text_untied"
#define ROOT "build/test_qwen35_bad"

static int load_fails_with(const char *dir, nc_status code, const char *want) {
    qwen35_model *m = NULL;
    nc_error err;
    nc_status st = qwen35_load(dir, 1, &m, &err);
    int ok = st == code && m == NULL && !strchr(err.msg, '\n') && strstr(err.msg, want);
    if (!ok) printf("  %s: got status %d, message: %s\n", dir, (int)st, err.msg);
    qwen35_free(m);
    return ok;
}

#define NEED_FIXTURES()                                                                            \
    do {                                                                                           \
        if (!nc_is_dir(VL) || !nc_is_dir(TEXT)) SKIP("Qwen3.5 fixtures missing");                  \
    } while (0)

static void test_moe_and_other_types_are_refused(void) {
    NEED_FIXTURES();
    const char *d = nc_test_model_case(VL, ROOT, "moe", "\"model_type\": \"qwen3_5\"",
                                       "\"model_type\": \"qwen3_5_moe\"");
    CHECK(d && nc_test_write_weights(VL, d, NULL, NULL, NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_UNSUPPORTED, "'qwen3_5_moe' (Qwen3.5 mixture of experts)"));
    d = nc_test_model_case(TEXT, ROOT, "next", "\"qwen3_5_text\"", "\"qwen3_next\"");
    CHECK(load_fails_with(d, NC_ERR_UNSUPPORTED, "model_type 'qwen3_next' is not a Qwen3.5"));
    d = nc_test_model_case(VL, ROOT, "no_text_config", "\"text_config\"", "\"txt_config\"");
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "needs a text_config object"));
    d = nc_test_model_case(TEXT, ROOT, "bad_layer_type", "\"full_attention_interval\": 2",
                           "\"layer_types\": [\"linear_attention\", \"sliding_attention\", "
                           "\"linear_attention\"]");
    CHECK(load_fails_with(d, NC_ERR_UNSUPPORTED, "layer_types[1]"));
    d = nc_test_model_case(TEXT, ROOT, "short_layer_types", "\"full_attention_interval\": 2",
                           "\"layer_types\": [\"linear_attention\"]");
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "layer_types must list num_hidden_layers (3)"));
    d = nc_test_model_case(TEXT, ROOT, "bad_groups", "\"linear_num_value_heads\": 4",
                           "\"linear_num_value_heads\": 3");
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "linear_num_value_heads 3"));
}

static void test_vision_only_and_partial_checkpoints(void) {
    NEED_FIXTURES();
    const char *d = nc_test_model_case(VL, ROOT, "vision_only", NULL, NULL);
    CHECK(d && nc_test_write_weights(VL, d, "model.language_model.", NULL, NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND, "no language-model weights"));
    d = nc_test_model_case(VL, ROOT, "no_linear", NULL, NULL);
    CHECK(d && nc_test_write_weights(VL, d, "model.language_model.layers.2.linear_attn.", NULL,
                                     NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND, "layer 2 is a linear-attention layer"));
    d = nc_test_model_case(VL, ROOT, "no_a_log", NULL, NULL);
    CHECK(d && nc_test_write_weights(VL, d, "model.language_model.layers.0.linear_attn.A_log", NULL,
                                     NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND,
                          "tensor 'model.language_model.layers.0.linear_attn.A_log' not found"));
    d = nc_test_model_case(TEXT, ROOT, "conv_shape", NULL, NULL);
    CHECK(d && nc_test_write_weights(TEXT, d, NULL, NULL,
                                     "model.layers.0.linear_attn.conv1d.weight") == 0);
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "has shape [113, 1, 4]; the config needs [112, 1, 4]"));
    d = nc_test_model_case(TEXT, ROOT, "no_lm_head", NULL, NULL); /* untied */
    CHECK(d && nc_test_write_weights(TEXT, d, "lm_head.weight", NULL, NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND, "tensor 'lm_head.weight' not found"));
}

/* full_attention_interval 2 over 3 layers: linear, full, linear; the
 * fixture's partial_rotary_factor 0.5 of head_dim 24 is 12 rotary dims. */
static void test_config_layer_pattern_and_rotary(void) {
    NEED_FIXTURES();
    qwen35_config c;
    nc_error err;
    CHECK_OK(qwen35_config_load(TEXT, &c, &err), &err);
    CHECK(!c.is_vl && c.num_hidden_layers == 3 && c.n_full == 1);
    CHECK(!c.is_full[0] && c.is_full[1] && !c.is_full[2]);
    CHECK(c.rotary_dim == 12 && c.head_dim == 24 && !c.tie_word_embeddings);
    CHECK_OK(qwen35_config_load(VL, &c, &err), &err);
    CHECK(c.is_vl && c.n_full == 1 && c.is_full[1] && c.rotary_dim == 8);
    CHECK(c.linear_num_value_heads == 6 && c.linear_conv_kernel_dim == 3 && c.tie_word_embeddings);
    CHECK(qwen35_is_qwen35_dir(VL) && qwen35_is_qwen35_dir(TEXT));
    CHECK(!qwen35_is_qwen35_dir("tests/fixtures/qwen3/tiny_gqa2"));
    /* no interval and no layer_types: HF's default of every 4th layer */
    const char *d = nc_test_model_case(TEXT, ROOT, "default_interval",
                                       "\"full_attention_interval\": 2", "\"_unused\": 2");
    CHECK(d);
    CHECK_OK(qwen35_config_load(d, &c, &err), &err);
    CHECK(c.n_full == 0);
}

int main(void) {
    RUN(test_moe_and_other_types_are_refused);
    RUN(test_vision_only_and_partial_checkpoints);
    RUN(test_config_layer_pattern_and_rotary);
    return nc_test_exit_code();
}
