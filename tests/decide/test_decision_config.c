/* decision.json and decision.safetensors that are missing fields, have
 * wrong shapes or contradict each other (or the encoder) fail with one line
 * naming the field or tensor, and load nothing. Each case edits the compact
 * fixture's decision.json (tests/fixtures/decision/dm_compact) in one place. */
#include <jansson.h>
#include <unistd.h>

#include "../test.h"
#include "base/mmap.h"
#include "decide/decision.h"

#define DIR_ "tests/fixtures/decision/dm_compact"

/* The fixture's decision.json with key set to value (a JSON text), or
 * removed when value is NULL; parsed against the fixture's encoder. Returns
 * the status; err has the message. */
static nc_status parse_edited(const char *key, const char *value, nc_error *err) {
    modernbert_config enc;
    if (modernbert_config_load(DIR_, &enc, err) != NC_OK) return NC_ERR_IO;
    json_t *o = json_load_file(DIR_ "/decision.json", 0, NULL);
    if (!o) {
        modernbert_config_free(&enc);
        return NC_ERR_IO;
    }
    if (value)
        json_object_set_new(o, key, json_loads(value, JSON_DECODE_ANY, NULL));
    else
        json_object_del(o, key);
    char *text = json_dumps(o, 0);
    json_decref(o);
    decision_config c;
    nc_status st = decision_config_parse(text, strlen(text), "decision.json", &enc, &c, err);
    if (st == NC_OK) decision_config_free(&c);
    free(text);
    modernbert_config_free(&enc);
    return st;
}

typedef struct bad_case {
    const char *key, *value; /* value NULL: the field removed */
    const char *says;        /* the message names this */
} bad_case;

static void test_bad_fields(void) {
    const bad_case cases[] = {
        {"temperature", NULL, "missing field 'temperature'"},
        {"marker_token_ids", NULL, "missing field 'marker_token_ids'"},
        {"format", "\"other\"", "field 'format'"},
        {"hidden_size", "48", "contradicts the encoder's hidden_size 32"},
        {"type_vocab_size", "4", "'type_vocab_size' = 4 contradicts num_markers 4"},
        {"marker_token_ids", "[1, 2]", "'marker_token_ids' must be an array of num_markers (4)"},
        {"marker_token_ids", "[99999]", "marker_token_ids[0] must be a token id"},
        {"marker_token_ids", "[5, 6, 5, 7]", "marker_token_ids[2] repeats marker_token_ids[0]"},
        {"head_attention_heads", "5", "'head_attention_heads' = 5 does not divide hidden_size 32"},
        {"head_norm", "\"middle\"", "'head_norm' must be \"pre\" or \"post\""},
        {"head_activation", "\"relu\"", "'head_activation'"},
        {"temperature", "0", "'temperature' must be a positive number"},
        {"temperature", "\"hot\"", "field 'temperature' must be a number"},
        {"action_features", "[\"raw_probs\", \"mean\"]", "action_features[1]"},
        {"num_markers", "1", "field 'num_markers' = 1 is outside"},
        {"action_labels", "[\"a\", \"b\"]", "'action_labels' must be an array of num_actions (4)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nc_error err = {0};
        nc_status st = parse_edited(cases[i].key, cases[i].value, &err);
        CHECKF(st != NC_OK, "%s = %s was accepted", cases[i].key,
               cases[i].value ? cases[i].value : "(removed)");
        CHECKF(strstr(err.msg, cases[i].says) && !strchr(err.msg, '\n'),
               "%s: message \"%s\" does not say \"%s\"", cases[i].key, err.msg, cases[i].says);
    }
    nc_error err = {0};
    CHECK_OK(parse_edited("action_labels", "[\"up\", \"right\", \"down\", \"left\"]", &err), &err);
}

/* A folder whose decision.json disagrees with its decision.safetensors. */
static void check_load_fails(const char *key, const char *value, const char *says) {
    char tmp[] = "/tmp/nc_decision_XXXXXX";
    CHECK(mkdtemp(tmp));
    const char *files[] = {"config.json", "model.safetensors", "tokenizer.json",
                           "decision.safetensors"};
    char src[512], dst[512];
    nc_error err = {0};
    for (size_t i = 0; i < 4; i++) {
        snprintf(src, sizeof src, DIR_ "/%s", files[i]);
        snprintf(dst, sizeof dst, "%s/%s", tmp, files[i]);
        CHECK_OK(nc_copy_file(src, dst, &err), &err);
    }
    json_t *o = json_load_file(DIR_ "/decision.json", 0, NULL);
    CHECK(o);
    json_object_set_new(o, key, json_loads(value, JSON_DECODE_ANY, NULL));
    snprintf(dst, sizeof dst, "%s/decision.json", tmp);
    int wrote = json_dump_file(o, dst, 0) == 0;
    json_decref(o);
    decision_model *m = NULL;
    nc_status st = wrote ? decision_load(tmp, 1, &m, &err) : NC_ERR_IO;
    decision_free(m);
    for (size_t i = 0; i < 4; i++) {
        snprintf(dst, sizeof dst, "%s/%s", tmp, files[i]);
        unlink(dst);
    }
    snprintf(dst, sizeof dst, "%s/decision.json", tmp);
    unlink(dst);
    rmdir(tmp);
    CHECK(wrote);
    CHECKF(st != NC_OK && m == NULL, "%s = %s loaded", key, value);
    CHECKF(strstr(err.msg, says) != NULL, "message \"%s\" does not say \"%s\"", err.msg, says);
}

static void test_head_layers_contradict_weights(void) {
    check_load_fails("head_layers", "2", "21 tensors; decision.json (head_layers = 2) needs 33");
}

static void test_wrong_shaped_tensor(void) {
    check_load_fails("scorer_hidden_size", "9",
                     "tensor 'scorer.0.weight' has shape [8, 32]; the config needs [9, 32]");
}

static void test_feature_width_contradicts_weights(void) {
    check_load_fails("action_features", "[\"raw_probs\", \"cls\"]",
                     "tensor 'action.0.weight' has shape [8, 4]; the config needs [8, 36]");
}

int main(void) {
    RUN(test_bad_fields);
    RUN(test_head_layers_contradict_weights);
    RUN(test_wrong_shaped_tensor);
    RUN(test_feature_width_contradicts_weights);
    return nc_test_exit_code();
}
