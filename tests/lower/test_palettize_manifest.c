/* The palettize settings in manifest.json (src/lower/palettize_manifest.c):
 * written by both compiles (a Qwen3 and an encoder bundle) and read back by
 * both manifest readers with the values the compile was given; an fp16
 * bundle has none; each malformed field is refused with one line naming
 * it (palettize.bits, palettize.kmeans.seed, ...). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "base/json.h"
#include "bundle/bundle_io.h"
#include "lower/modernbert_compile.h"
#include "bundle/modernbert_manifest.h"
#include "bundle/palettize_manifest.h"
#include "lower/qwen3_compile.h"

static char tmp_root[64];

static const char *tmp_path(const char *name, char *buf, size_t cap) {
    if (!tmp_root[0]) {
        strcpy(tmp_root, "/tmp/nectar_palman_XXXXXX");
        if (!mkdtemp(tmp_root)) return NULL;
    }
    snprintf(buf, cap, "%s/%s", tmp_root, name);
    return buf;
}

static void test_settings_round_trip_through_json(void) {
    const lower_palette_options cases[] = {
        {.bits = 8, .group_size = 16, .seed = 0x6e6563746172ull},
        {.bits = 6, .group_size = 1, .seed = 7},
        {.bits = 4, .group_size = 0, .seed = 1},
    };
    const char *gran[] = {"per_grouped_channel", "per_channel", "per_tensor"};
    for (int i = 0; i < 3; i++) {
        json_t *root = json_object();
        json_object_set_new(root, "palettize", lower_palette_to_json(&cases[i]));
        const json_t *p = json_object_get(root, "palettize");
        CHECK(!strcmp(json_string_value(json_object_get(p, "granularity")), gran[i]));
        CHECK(json_integer_value(json_object_get(json_object_get(p, "kmeans"), "max_iterations")) ==
              LOWER_PALETTE_MAX_STEPS);
        lower_palette_options o;
        nc_error err = {0};
        CHECK_OK(lower_palette_from_json(root, &o, "m", &err), &err);
        CHECK(o.bits == cases[i].bits && o.group_size == cases[i].group_size &&
              o.seed == cases[i].seed);
        json_decref(root);
    }
    lower_palette_options none = {0}, o = {.bits = 3};
    CHECK(lower_palette_to_json(&none) == NULL);
    json_t *root = json_object();
    nc_error err = {0};
    CHECK_OK(lower_palette_from_json(root, &o, "m", &err), &err); /* absent: fp16 */
    CHECK(o.bits == 0 && o.group_size == 0 && o.seed == 0);
    json_decref(root);
}

static void test_malformed_fields_are_one_line_naming_them(void) {
    const lower_palette_options good = {.bits = 8, .group_size = 16, .seed = 3};
    static const struct {
        const char *path, *value, *named; /* JSON value set at path ("" deletes) */
    } bad[] = {
        {"bits", "5", "palettize.bits"},
        {"bits", "0", "palettize.bits"},
        {"bits", "\"8\"", "palettize.bits"},
        {"index_dtype", "\"uint4\"", "palettize.index_dtype"},
        {"table_dtype", "\"fp32\"", "palettize.table_dtype"},
        {"group_size", "-1", "palettize.group_size"},
        {"group_size", "1", "palettize.granularity"}, /* per_channel, says per_grouped */
        {"granularity", "", "palettize.granularity"},
        {"kmeans", "[]", "palettize.kmeans"},
        {"kmeans.init", "\"random\"", "palettize.kmeans.init"},
        {"kmeans.seed", "-2", "palettize.kmeans.seed"},
        {"kmeans.seed", "1.5", "palettize.kmeans.seed"},
        {"kmeans.max_iterations", "0", "palettize.kmeans.max_iterations"},
        {"kmeans.max_iterations", "", "palettize.kmeans.max_iterations"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *root = json_object(), *p = lower_palette_to_json(&good);
        json_object_set_new(root, "palettize", p);
        json_t *obj = p;
        const char *key = bad[i].path;
        if (!strncmp(key, "kmeans.", 7)) {
            obj = json_object_get(p, "kmeans");
            key += 7;
        }
        if (bad[i].value[0])
            json_object_set_new(obj, key, json_loads(bad[i].value, JSON_DECODE_ANY, NULL));
        else
            json_object_del(obj, key);
        lower_palette_options o;
        nc_error err = {0};
        nc_status st = lower_palette_from_json(root, &o, "B/manifest.json", &err);
        CHECKF(st == NC_ERR_FORMAT && strstr(err.msg, bad[i].named) && !strchr(err.msg, '\n') &&
                   !strncmp(err.msg, "B/manifest.json: ", 17),
               "%s = %s: status %d, '%s'", bad[i].path, bad[i].value, st, err.msg);
        json_decref(root);
    }
    json_t *root = json_loads("{\"palettize\": 8}", 0, NULL);
    lower_palette_options o;
    nc_error err = {0};
    CHECK(lower_palette_from_json(root, &o, "m", &err) == NC_ERR_FORMAT &&
          strstr(err.msg, "palettize is not an object"));
    json_decref(root);
}

/* BUNDLE/manifest.json with palettize.bits replaced by 5 still parses as
 * JSON but is refused by `parse`, naming palettize.bits. */
static int refuses_bad_bits(const char *bundle, int encoder) {
    char path[256], *text = NULL;
    size_t len = 0;
    nc_error err = {0};
    if (lower_manifest_text(bundle, path, sizeof path, &text, &len, &err)) return 0;
    char *b = strstr(text, "\"bits\": 4");
    if (b) b[8] = '5';
    nc_status st;
    if (encoder) {
        mb_manifest *m = calloc(1, sizeof *m);
        st = m ? mb_manifest_parse(text, len, path, m, &err) : NC_ERR_NOMEM;
        free(m);
    } else {
        lower_manifest m;
        st = lower_manifest_parse(text, len, path, &m, &err);
        if (st == NC_OK) lower_manifest_free(&m);
    }
    free(text);
    return b && st == NC_ERR_FORMAT && strstr(err.msg, "palettize.bits") && !strchr(err.msg, '\n');
}

static void test_both_bundle_kinds_record_and_read_back(void) {
    char q[128], q16[128], e[128];
    nc_error err = {0};
    lower_compile_options o = {0};
    lower_compile_report rep;
    o.model_dir = "tests/fixtures/qwen3/tiny_gqa2";
    o.out_dir = tmp_path("q4", q, sizeof q);
    o.ctx = 64;
    o.n_seqs = 1;
    o.seqs[0] = 32;
    o.n_threads = 2;
    o.palettize = (lower_palette_options){.bits = 4, .group_size = 8, .seed = 99};
    CHECK_OK(lower_qwen3_compile(&o, &rep, &err), &err);
    lower_manifest m;
    CHECK_OK(lower_manifest_read(q, &m, &err), &err);
    CHECK(m.palettize.bits == 4 && m.palettize.group_size == 8 && m.palettize.seed == 99);
    lower_manifest_free(&m);
    lower_palette_options got;
    CHECK_OK(lower_bundle_palettize(q, &got, &err), &err);
    CHECK(got.bits == 4 && got.group_size == 8);
    CHECK(refuses_bad_bits(q, 0));

    o.out_dir = tmp_path("q16", q16, sizeof q16);
    o.palettize = (lower_palette_options){0};
    CHECK_OK(lower_qwen3_compile(&o, &rep, &err), &err);
    CHECK_OK(lower_manifest_read(q16, &m, &err), &err);
    CHECK(m.palettize.bits == 0);
    lower_manifest_free(&m);

    mb_compile_options eo = {0};
    mb_compile_report er;
    eo.model_dir = "tests/fixtures/modernbert/mb_mlm";
    eo.out_dir = tmp_path("enc", e, sizeof e);
    eo.n_seqs = 1;
    eo.seqs[0] = 32;
    eo.n_batches = 1;
    eo.batches[0] = 1;
    eo.n_threads = 2;
    eo.palettize = (lower_palette_options){.bits = 4, .group_size = 1, .seed = 5};
    CHECK_OK(lower_modernbert_compile(&eo, &er, &err), &err);
    mb_manifest *mm = calloc(1, sizeof *mm);
    CHECK(mm);
    CHECK_OK(mb_manifest_read(e, mm, &err), &err);
    CHECK(mm->palettize.bits == 4 && mm->palettize.group_size == 1 && mm->palettize.seed == 5);
    free(mm);
    CHECK(refuses_bad_bits(e, 1));
    char line[256];
    lower_palette_describe(&eo.palettize, line, sizeof line);
    CHECKF(!strcmp(line, "4 bits (uint4 indices, fp16 tables), one table per output channel, "
                         "k-means++ seed 5, at most 1000 Lloyd steps"),
           "%s", line);
}

int main(void) {
    RUN(test_settings_round_trip_through_json);
    RUN(test_malformed_fields_are_one_line_naming_them);
    RUN(test_both_bundle_kinds_record_and_read_back);
    const char *sub[] = {"q4", "q16", "enc"};
    for (int i = 0; tmp_root[0] && i < 3; i++) {
        char p[128];
        lower_remove_tree(tmp_path(sub[i], p, sizeof p));
    }
    if (tmp_root[0]) rmdir(tmp_root);
    return nc_test_exit_code();
}
