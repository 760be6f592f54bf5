/* Broken ModernBERT folders and configs: each is refused with one message
 * that names the file and the field or tensor at fault (no crash, no leak;
 * the suite also runs this under ASan). Folders are the mb_base fixture's
 * weights with an edited config.json, written under build/. */
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "base/mmap.h"
#include "models/modernbert.h"

#define FIX "tests/fixtures/modernbert/mb_base"

/* config.json of mb_base with `from` replaced by `to` (must occur once). */
static int edited_config(const char *from, const char *to, char **out, size_t *len) {
    char *buf;
    size_t n;
    nc_error err = {0};
    if (nc_read_file(FIX "/config.json", &buf, &n, &err) != NC_OK) return -1;
    char *at = strstr(buf, from);
    if (!at) {
        free(buf);
        return -1;
    }
    size_t lf = strlen(from), lt = strlen(to);
    char *o = malloc(n - lf + lt + 1);
    memcpy(o, buf, (size_t)(at - buf));
    memcpy(o + (at - buf), to, lt);
    memcpy(o + (at - buf) + lt, at + lf, n - (size_t)(at - buf) - lf);
    *len = n - lf + lt;
    o[*len] = '\0';
    free(buf);
    *out = o;
    return 0;
}

typedef struct {
    const char *from, *to, *want;
    nc_status code;
} config_case;

static void test_bad_configs_name_the_field(void) {
    static const config_case cases[] = {
        {"\"model_type\": \"modernbert\"", "\"model_type\": \"bert\"",
         "model_type 'bert' is not supported", NC_ERR_UNSUPPORTED},
        {"\"norm_bias\": false", "\"norm_bias\": true", "norm_bias = true is not supported",
         NC_ERR_UNSUPPORTED},
        {"\"hidden_activation\": \"gelu\"", "\"hidden_activation\": \"mish\"",
         "hidden_activation 'mish' is not supported", NC_ERR_UNSUPPORTED},
        {"\"num_attention_heads\": 4", "\"num_attention_heads\": 5",
         "hidden_size 64 is not a multiple of num_attention_heads 5", NC_ERR_FORMAT},
        {"\"global_rope_theta\": 160000.0", "\"global_rope_theta\": -1",
         "global_rope_theta -1 must be a finite number > 1", NC_ERR_RANGE},
        {"\"classifier_pooling\": \"cls\"", "\"classifier_pooling\": \"max\"",
         "classifier_pooling 'max' is not cls or mean", NC_ERR_UNSUPPORTED},
        {"\"ModernBertModel\"", "\"ModernBertForTokenClassification\"",
         "architectures[0] 'ModernBertForTokenClassification' is not supported",
         NC_ERR_UNSUPPORTED},
        {"\"vocab_size\": 427", "\"vocab_size\": \"big\"", "vocab_size", NC_ERR_FORMAT},
        {"\"norm_eps\": 1e-05", "\"norm_eps\": 0", "norm_eps 0 must be in (0, 1)", NC_ERR_RANGE},
        {"\"global_attn_every_n_layers\": 3",
         "\"global_attn_every_n_layers\": 3, \"layer_types\": [\"full_attention\"]",
         "layer_types must be a list of num_hidden_layers (4) strings", NC_ERR_FORMAT},
        {"\"global_attn_every_n_layers\": 3",
         "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"yarn\"}}",
         "rope_type 'yarn' is not supported", NC_ERR_UNSUPPORTED},
        {"\"global_attn_every_n_layers\": 3", "\"id2label\": {\"0\": \"a\", \"0x\": \"b\"}",
         "id2label['0x']", NC_ERR_FORMAT},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *json;
        size_t len;
        if (edited_config(cases[i].from, cases[i].to, &json, &len)) {
            printf("  case %zu: '%s' not in the fixture config\n", i, cases[i].from);
            bad++;
            continue;
        }
        modernbert_config c;
        nc_error err = {0};
        nc_status st = modernbert_config_parse(json, len, "config.json", &c, &err);
        if (st == NC_OK) modernbert_config_free(&c);
        if (st != cases[i].code || !strstr(err.msg, cases[i].want) ||
            strncmp(err.msg, "config.json", 11)) {
            printf("  case %zu: status %d, message '%s', want '%s'\n", i, (int)st, err.msg,
                   cases[i].want);
            bad++;
        }
        free(json);
    }
    CHECK(bad == 0);
}

/* A folder: the fixture's weights (symlinked) and an edited config. */
static int make_folder(const char *dir, const char *from, const char *to) {
    char *json, path[512], target[512];
    size_t len;
    nc_error err = {0};
    mkdir("build", 0777);
    mkdir("build/test_modernbert_bad", 0777);
    mkdir(dir, 0777);
    if (edited_config(from, to, &json, &len)) return -1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = nc_write_file_atomic(path, json, len, &err) == NC_OK ? 0 : -1;
    free(json);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!realpath(FIX "/model.safetensors", target)) return -1;
    unlink(path);
    return rc || symlink(target, path) ? -1 : 0;
}

static void expect_load_error(const char *name, const char *from, const char *to,
                              const char *want) {
    char dir[256];
    snprintf(dir, sizeof dir, "build/test_modernbert_bad/%s", name);
    CHECK(make_folder(dir, from, to) == 0);
    modernbert_model *m = NULL;
    nc_error err = {0};
    nc_status st = modernbert_load(dir, 1, &m, &err);
    modernbert_free(m);
    CHECKF(st != NC_OK && strstr(err.msg, want), "got '%s', want '%s'", err.msg, want);
}

static void test_shape_mismatch_names_the_tensor(void) {
    expect_load_error("inter", "\"intermediate_size\": 96", "\"intermediate_size\": 100",
                      "tensor 'layers.0.mlp.Wi.weight' has shape [192, 64]; the config needs "
                      "[200, 64]");
}

static void test_missing_layer_names_the_tensor(void) {
    expect_load_error("layers", "\"num_hidden_layers\": 4", "\"num_hidden_layers\": 5",
                      "tensor 'layers.4.attn_norm.weight' not found");
}

static void test_missing_head_names_the_tensor(void) {
    expect_load_error("head", "\"ModernBertModel\"", "\"ModernBertForSequenceClassification\"",
                      "tensor 'head.dense.weight' not found");
}

static void test_vocab_mismatch_names_the_embeddings(void) {
    expect_load_error("vocab", "\"vocab_size\": 427", "\"vocab_size\": 500",
                      "tensor 'embeddings.tok_embeddings.weight' has shape [427, 64]");
}

int main(void) {
    RUN(test_bad_configs_name_the_field);
    RUN(test_shape_mismatch_names_the_tensor);
    RUN(test_missing_layer_names_the_tensor);
    RUN(test_missing_head_names_the_tensor);
    RUN(test_vocab_mismatch_names_the_embeddings);
    return nc_test_exit_code();
}
