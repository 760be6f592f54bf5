/* Bad model folders: each is built under build/test_bad_models/ from the
 * tiny_gqa2 fixture with one thing broken, and qwen3_load must fail with a
 * one-line message naming the file, field or tensor at fault (and free
 * everything: the ASan run checks for leaks). */
#include <sys/stat.h>

#include "../common/model_dir.h"
#include "../test.h"
#include "base/mmap.h"
#include "models/qwen3.h"

#define SRC "tests/fixtures/qwen3/tiny_gqa2"
#define ROOT "build/test_bad_models"

static int write_weights(const char *dir, const char *drop, const char *retype,
                         const char *reshape) {
    return nc_test_write_weights(SRC, dir, drop, retype, reshape);
}

static const char *make_case(const char *name, const char *from, const char *to) {
    return nc_test_model_case(SRC, ROOT, name, from, to);
}

/* qwen3_load(dir) fails with `code` and a one-line message holding `want`. */
static int load_fails_with(const char *dir, nc_status code, const char *want) {
    qwen3_model *m = NULL;
    nc_error err;
    nc_status st = qwen3_load(dir, NULL, &m, &err);
    int ok = st == code && m == NULL && !strchr(err.msg, '\n') && strstr(err.msg, want);
    if (!ok) printf("  %s: got status %d, message: %s\n", dir, (int)st, err.msg);
    qwen3_free(m);
    return ok;
}

#define NEED_FIXTURE()                                                                             \
    do {                                                                                           \
        if (!nc_is_dir(SRC)) SKIP(SRC " missing");                                                 \
    } while (0)

static void test_missing_folder_and_files(void) {
    NEED_FIXTURE();
    CHECK(load_fails_with(ROOT "/does_not_exist", NC_ERR_NOT_FOUND, "no such model folder"));
    const char *d = make_case("no_config", NULL, NULL);
    CHECK(d);
    remove(ROOT "/no_config/config.json");
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND, "no_config/config.json: file not found"));
    d = make_case("no_weights", NULL, NULL);
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND, "no model.safetensors"));
}

static void test_bad_json_names_file_line_col(void) {
    NEED_FIXTURE();
    const char *d = make_case("bad_json", "\"hidden_size\"", "\"hidden_size\" ::");
    CHECK(d && write_weights(d, NULL, NULL, NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "bad_json/config.json:"));
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "invalid JSON"));
    d = make_case("bad_gen_json", NULL, NULL);
    CHECK(d && write_weights(d, NULL, NULL, NULL) == 0);
    nc_error err;
    CHECK_OK(nc_write_file_atomic(ROOT "/bad_gen_json/generation_config.json", "{\"eos", 5, &err),
             &err);
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "generation_config.json:1:"));
}

static void test_unknown_architecture_and_bad_fields(void) {
    NEED_FIXTURE();
    const char *d = make_case("mistral", "\"qwen3\"", "\"mistral\"");
    CHECK(d && write_weights(d, NULL, NULL, NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_UNSUPPORTED, "model_type 'mistral' is not supported"));
    d = make_case("no_hidden", "\"hidden_size\"", "\"hidden_sizes\"");
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND, "missing field 'hidden_size'"));
    d = make_case("str_layers", "\"num_hidden_layers\": 3", "\"num_hidden_layers\": \"3\"");
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "'num_hidden_layers' must be an integer"));
    d = make_case("bad_gqa", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "num_key_value_heads 3"));
    d = make_case("yarn", "\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"yarn\"}");
    CHECK(load_fails_with(d, NC_ERR_UNSUPPORTED, "rope_scaling 'yarn'"));
}

static void test_truncated_and_corrupted_safetensors(void) {
    NEED_FIXTURE();
    nc_error err;
    char *data;
    size_t len;
    CHECK_OK(nc_read_file(SRC "/model.safetensors", &data, &len, &err), &err);
    CHECK(make_case("truncated", NULL, NULL));
    nc_status st = nc_write_file_atomic(ROOT "/truncated/model.safetensors", data, len / 2, &err);
    memcpy(data + 20, "\x01\x02garbage", 9);
    const char *d2 = make_case("corrupted", NULL, NULL); /* static buffer: last case only */
    nc_status st2 = nc_write_file_atomic(ROOT "/corrupted/model.safetensors", data, len, &err);
    free(data);
    CHECK(st == NC_OK && st2 == NC_OK);
    CHECK(
        load_fails_with(ROOT "/truncated", NC_ERR_FORMAT, "truncated/model.safetensors: tensor '"));
    CHECK(load_fails_with(ROOT "/truncated", NC_ERR_FORMAT, "past the data block"));
    CHECK(load_fails_with(d2, NC_ERR_FORMAT, "corrupted/model.safetensors: header"));
}

static void test_wrong_dtype_missing_tensor_wrong_shape(void) {
    NEED_FIXTURE();
    const char *d = make_case("i32", NULL, NULL);
    CHECK(write_weights(d, NULL, "model.layers.1.self_attn.k_proj.weight", NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_UNSUPPORTED,
                          "tensor 'model.layers.1.self_attn.k_proj.weight' has dtype I32"));
    d = make_case("missing", NULL, NULL);
    CHECK(write_weights(d, "model.layers.2.mlp.up_proj.weight", NULL, NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND,
                          "tensor 'model.layers.2.mlp.up_proj.weight' not found"));
    d = make_case("shape", NULL, NULL);
    CHECK(write_weights(d, NULL, NULL, "model.layers.0.self_attn.q_proj.weight") == 0);
    CHECK(load_fails_with(d, NC_ERR_FORMAT, "has shape [97, 64]; the config needs [96, 64]"));
    d = make_case("no_lm_head", NULL, NULL); /* untied: lm_head.weight is required */
    CHECK(write_weights(d, "lm_head.weight", NULL, NULL) == 0);
    CHECK(load_fails_with(d, NC_ERR_NOT_FOUND, "tensor 'lm_head.weight' not found"));
    /* tied, no lm_head.weight: loads and uses the embedding */
    d = make_case("tied", "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
    CHECK(write_weights(d, "lm_head.weight", NULL, NULL) == 0);
    qwen3_model *m;
    nc_error err;
    CHECK_OK(qwen3_load(d, &(qwen3_load_options){1}, &m, &err), &err);
    CHECK(qwen3_model_config(m)->tie_word_embeddings == 1);
    qwen3_free(m);
}

int main(void) {
    RUN(test_missing_folder_and_files);
    RUN(test_bad_json_names_file_line_col);
    RUN(test_unknown_architecture_and_bad_fields);
    RUN(test_truncated_and_corrupted_safetensors);
    RUN(test_wrong_dtype_missing_tensor_wrong_shape);
    return nc_test_exit_code();
}
