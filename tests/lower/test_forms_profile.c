/* The lowering forms as probe-profile keys (src/bundle/forms_profile.c):
 * every value of every key's order is a name the manifest's parser takes
 * and reads back; a program's outcome is charged to the forms its kernels
 * hold (the counts written out here by hand from the function names); the
 * profile's record leads to the next value no device refused, an accepted
 * one first, for the device it was recorded for only. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "bundle/forms_profile.h"

static void test_every_value_round_trips(void) {
    static const char *const values[LOWER_N_FORM_KEYS][6] = {
        {"layer", "kernel", "function"}, {"4", "3", "2", "1"}, {"onehot", "gather", "host"},
        {"conv", "matmul"},              {"broadcast", "grouped"}, {"16384", "8192", "1024", "65536"},
        {"per-chunk", "one"},            {"sigmoid", "op"},    {"32", "none"}};
    for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
        for (int i = 0; i < 6 && values[k][i]; i++) {
            lower_all_forms a = {{0}, 0};
            char back[32];
            CHECKF(lower_form_set(&a, (lower_form_key)k, values[k][i]) == 0, "%s=%s",
                   lower_form_key_name((lower_form_key)k), values[k][i]);
            lower_form_value(&a, (lower_form_key)k, back, sizeof back);
            CHECKF(!strcmp(back, values[k][i]), "%s: %s read back as %s",
                   lower_form_key_name((lower_form_key)k), values[k][i], back);
        }
        lower_all_forms a = {{0}, 0};
        CHECKF(lower_form_set(&a, (lower_form_key)k, "spiral") == -1, "%s",
               lower_form_key_name((lower_form_key)k));
    }
    /* the defaults (zero) read as the compile's defaults */
    lower_all_forms d = {{0}, 0};
    char v[32];
    lower_form_value(&d, LOWER_FK_KERNELS_PER_LAYER, v, sizeof v);
    CHECK(!strcmp(v, "4"));
    lower_form_value(&d, LOWER_FK_HEAD_ROWS, v, sizeof v);
    CHECK(!strcmp(v, "16384"));
    CHECK(!strcmp(lower_form_option(LOWER_FK_KV_UPDATE), "--kv-update"));
}

static void fn(lower_program_info *p, const char *name, int n_out) {
    lower_fn_info *f = &p->fns[p->n_fns++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->n_out = n_out;
}

/* A layer program of two buckets and the four kernels. */
static void layer_program(lower_program_info *p) {
    memset(p, 0, sizeof *p);
    p->layer = 0;
    const char *names[8] = {"qkv_s32", "kv_s32", "attn_s32", "mlp_s32",
                            "qkv_s64", "kv_s64", "attn_s64", "mlp_s64"};
    for (int i = 0; i < 8; i++)
        fn(p, names[i], 1);
}

static void test_tally_charges_the_forms_a_kernel_holds(void) {
    static lower_program_info p;
    layer_program(&p);
    lower_forms_tally t;
    memset(&t, 0, sizeof t);
    /* refused whole; alone, the two attn functions are refused */
    int ok[8] = {1, 1, 0, 1, 1, 1, 0, 1};
    const char *errs[8] = {0};
    errs[2] = errs[6] = "matmul broadcasts";
    lower_forms_tally_program(&t, &p, 0, "12 procedures", ok, errs);
    CHECK(t.key[LOWER_FK_ATTENTION].refused == 2 && t.key[LOWER_FK_ATTENTION].ok == 0);
    CHECK(!strcmp(t.key[LOWER_FK_ATTENTION].error, "matmul broadcasts"));
    CHECK(t.key[LOWER_FK_ROPE].ok == 2 && t.key[LOWER_FK_ROPE].refused == 0);
    CHECK(t.key[LOWER_FK_KV_UPDATE].ok == 2 && t.key[LOWER_FK_KERNELS_PER_LAYER].ok == 2);
    /* not every function alone compiled: the split is not charged */
    CHECK(t.key[LOWER_FK_PROGRAM_SPLIT].ok == 0 && t.key[LOWER_FK_PROGRAM_SPLIT].refused == 0);

    /* refused whole, every function alone compiles: the split */
    memset(&t, 0, sizeof t);
    int all[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    lower_forms_tally_program(&t, &p, 0, "12 procedures", all, NULL);
    CHECK(t.key[LOWER_FK_PROGRAM_SPLIT].refused == 1 &&
          !strcmp(t.key[LOWER_FK_PROGRAM_SPLIT].error, "12 procedures"));
    CHECK(t.key[LOWER_FK_ATTENTION].ok == 2);
    /* accepted whole: every form it holds, the split too */
    memset(&t, 0, sizeof t);
    lower_forms_tally_program(&t, &p, 1, "", NULL, NULL);
    CHECK(t.key[LOWER_FK_PROGRAM_SPLIT].ok == 1 && t.key[LOWER_FK_ATTENTION].ok == 2 &&
          t.key[LOWER_FK_KV_UPDATE].ok == 2 && t.key[LOWER_FK_HEAD_ROWS].ok == 0);
    /* functions not tried alone: nothing but what the whole says */
    memset(&t, 0, sizeof t);
    int none[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    lower_forms_tally_program(&t, &p, 0, "x", none, NULL);
    for (int k = 0; k < LOWER_N_FORM_KEYS; k++)
        CHECK(t.key[k].ok == 0 && t.key[k].refused == 0);

    /* a head of three outputs refused: rows and split; a step mixer: exp, padding */
    static lower_program_info h, q;
    memset(&h, 0, sizeof h);
    h.layer = -1;
    fn(&h, "head_s32", 3);
    memset(&t, 0, sizeof t);
    lower_forms_tally_program(&t, &h, 0, "wide conv", NULL, NULL);
    CHECK(t.key[LOWER_FK_HEAD_ROWS].refused == 1 && t.key[LOWER_FK_HEAD_SPLIT].refused == 1 &&
          !strcmp(t.key[LOWER_FK_HEAD_ROWS].error, "wide conv"));
    memset(&q, 0, sizeof q);
    q.layer = 1;
    fn(&q, "step_s32", 4);
    memset(&t, 0, sizeof t);
    lower_forms_tally_program(&t, &q, 1, "", NULL, NULL);
    CHECK(t.key[LOWER_FK_EXP].ok == 1 && t.key[LOWER_FK_MATMUL_PAD].ok == 1 &&
          t.key[LOWER_FK_HEAD_SPLIT].ok == 0);
}

static void test_recommend_moves_refused_forms_only(void) {
    static lower_program_info p;
    layer_program(&p);
    lower_forms_tally t;
    memset(&t, 0, sizeof t); /* the default forms */
    int ok[8] = {1, 1, 0, 1, 1, 1, 0, 1};
    lower_forms_tally_program(&t, &p, 0, "refused", ok, NULL);
    json_t *prof = json_object();
    lower_forms_tally_put(prof, "fake:reject=broadcast-matmul", &t);
    lower_all_forms next;
    char why[1024], opts[256];
    int n = lower_forms_recommend(prof, "fake:reject=broadcast-matmul", &t.of, &next, why,
                                  sizeof why, opts, sizeof opts);
    CHECKF(n == 1 && next.forms.attention == LOWER_ATTN_GROUPED &&
               !strcmp(opts, "--attention grouped") && strstr(why, "broadcast refused"),
           "%d: %s / %s", n, opts, why);
    /* another device: nothing recorded */
    CHECK(lower_forms_recommend(prof, "real", &t.of, &next, why, sizeof why, opts, sizeof opts) ==
          0);
    CHECK(next.forms.attention == LOWER_ATTN_BROADCAST && opts[0] == '\0');

    /* grouped refused as well: nothing left to try, the form stays */
    lower_forms_tally g = t;
    g.of.forms.attention = LOWER_ATTN_GROUPED;
    lower_forms_tally_put(prof, "fake:reject=broadcast-matmul", &g);
    CHECK(lower_forms_recommend(prof, "fake:reject=broadcast-matmul", &t.of, &next, why,
                                sizeof why, opts, sizeof opts) == 0);

    /* an accepted value beats an untried one: layer refused, function accepted */
    json_t *doc = json_loads("{\"forms\": {\"real\": {\"program_split\": {"
                             "\"layer\": {\"ok\": 0, \"refused\": 5, \"error\": \"InvalidProcedure\"},"
                             "\"function\": {\"ok\": 60, \"refused\": 0, \"error\": \"\"}},"
                             "\"head_rows\": {\"16384\": {\"ok\": 0, \"refused\": 1, \"error\": \"e\"},"
                             "\"8192\": {\"ok\": 2, \"refused\": 1, \"error\": \"e\"}}}}}",
                             0, NULL);
    CHECK(doc != NULL);
    lower_all_forms d = {{0}, 0};
    n = lower_forms_recommend(doc, "real", &d, &next, why, sizeof why, opts, sizeof opts);
    /* 8192 is mixed (accepted and refused): skipped, so 4096, the first untried */
    CHECKF(n == 2 && next.forms.program_split == LOWER_SPLIT_FUNCTION &&
               next.forms.head_rows == 4096 &&
               !strcmp(opts, "--program-split function --head-rows 4096"),
           "%d: %s", n, opts);
    json_decref(doc);
    /* members of the wrong shape are skipped */
    doc = json_loads("{\"forms\": {\"real\": {\"rope\": 3, \"attention\": {\"broadcast\": 1}}}}", 0,
                     NULL);
    CHECK(lower_forms_recommend(doc, "real", &d, &next, why, sizeof why, opts, sizeof opts) == 0);
    json_decref(doc);
    doc = json_loads("{\"forms\": \"x\"}", 0, NULL);
    CHECK(lower_forms_recommend(doc, "real", &d, &next, why, sizeof why, opts, sizeof opts) == 0);
    json_decref(doc);
    json_decref(prof);
}

int main(void) {
    RUN(test_every_value_round_trips);
    RUN(test_tally_charges_the_forms_a_kernel_holds);
    RUN(test_recommend_moves_refused_forms_only);
    return nc_test_exit_code();
}
