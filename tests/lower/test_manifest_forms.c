/* plan.forms of a bundle's manifest.json (src/bundle/manifest.c): a
 * manifest without it, or without the forms added later, reads as the
 * forms bundles had before the choice existed; each form's name is read
 * back as written; a name no parser knows is one error naming it and the
 * kind of form. The manifest is the fuzz corpus's small one. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "bundle/manifest.h"

#define SMALL "tests/fuzz/corpus/fuzz_lower_manifest/small.json"

/* small.json with plan.forms set to forms_json (NULL: none), parsed. */
static nc_status parse_with_forms(const char *forms_json, lower_manifest *m, nc_error *err) {
    json_error_t je;
    json_t *root = json_load_file(SMALL, 0, &je);
    if (!root) return nc_fail(err, NC_ERR_IO, "%s: %s", SMALL, je.text);
    if (forms_json)
        json_object_set_new(json_object_get(root, "plan"), "forms", json_loads(forms_json, 0, &je));
    char *text = json_dumps(root, 0);
    json_decref(root);
    nc_status st = lower_manifest_parse(text, strlen(text), "manifest.json", m, err);
    free(text);
    return st;
}

static void test_forms_absent_read_as_the_old_defaults(void) {
    lower_manifest m;
    nc_error err = {0};
    CHECK_OK(parse_with_forms(NULL, &m, &err), &err);
    CHECK(m.forms.program_split == LOWER_SPLIT_LAYER && m.forms.head_split == LOWER_HEAD_ONE &&
          m.forms.kv_update == LOWER_KV_GATHER && m.forms.rope == LOWER_ROPE_MATMUL &&
          m.forms.attention == LOWER_ATTN_BROADCAST && m.forms.exp == LOWER_EXP_OP &&
          m.forms.matmul_pad == LOWER_PAD_NONE && m.forms.bucket_form == LOWER_BUCKETS_PER_BUCKET);
    lower_manifest_free(&m);
    /* the first three only: the later ones take their old forms */
    CHECK_OK(parse_with_forms("{\"program_split\":\"kernel\",\"head_split\":\"per-chunk\","
                              "\"head_rows\":16384,\"kv_update\":\"onehot\"}",
                              &m, &err),
             &err);
    CHECK(m.forms.program_split == LOWER_SPLIT_KERNEL && m.forms.head_split == LOWER_HEAD_PER_CHUNK &&
          m.forms.kv_update == LOWER_KV_ONEHOT && m.forms.rope == LOWER_ROPE_MATMUL &&
          m.forms.exp == LOWER_EXP_OP && m.forms.matmul_pad == LOWER_PAD_NONE);
    lower_manifest_free(&m);
}

static void test_forms_read_back_as_written(void) {
    lower_manifest m;
    nc_error err = {0};
    CHECK_OK(parse_with_forms("{\"program_split\":\"function\",\"head_split\":\"one\","
                              "\"head_rows\":4096,\"kv_update\":\"gather\",\"rope\":\"conv\","
                              "\"attention\":\"grouped\",\"exp\":\"sigmoid\",\"matmul_pad\":\"32\","
                              "\"bucket_form\":\"enumerated\"}",
                              &m, &err),
             &err);
    CHECK(m.forms.program_split == LOWER_SPLIT_FUNCTION && m.forms.head_split == LOWER_HEAD_ONE &&
          m.forms.head_rows == 4096 && m.forms.kv_update == LOWER_KV_GATHER &&
          m.forms.rope == LOWER_ROPE_CONV && m.forms.attention == LOWER_ATTN_GROUPED &&
          m.forms.exp == LOWER_EXP_SIGMOID && m.forms.matmul_pad == LOWER_PAD_32 &&
          m.forms.bucket_form == LOWER_BUCKETS_ENUMERATED);
    lower_manifest_free(&m);
}

static void test_unknown_form_names_it(void) {
    static const struct {
        const char *key, *noun;
    } forms[] = {{"program_split", "a program split"}, {"head_split", "a head split"},
                 {"kv_update", "a KV update"},         {"rope", "a RoPE form"},
                 {"attention", "an attention form"},   {"exp", "an exp form"},
                 {"matmul_pad", "a matmul padding"},   {"bucket_form", "a bucket form"}};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        char json[512], want[128];
        snprintf(json, sizeof json,
                 "{\"program_split\":\"layer\",\"head_split\":\"one\",\"head_rows\":16384,"
                 "\"kv_update\":\"gather\",\"%s\":\"spiral\"}",
                 forms[i].key);
        lower_manifest m;
        nc_error err = {0};
        nc_status st = parse_with_forms(json, &m, &err);
        if (st == NC_OK) lower_manifest_free(&m);
        snprintf(want, sizeof want, "plan.forms: 'spiral' is not %s", forms[i].noun);
        CHECKF(st == NC_ERR_FORMAT && strstr(err.msg, want), "%s: '%s'", forms[i].key, err.msg);
    }
}

int main(void) {
    RUN(test_forms_absent_read_as_the_old_defaults);
    RUN(test_forms_read_back_as_written);
    RUN(test_unknown_form_names_it);
    return nc_test_exit_code();
}
