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
            lower_all_forms a = {{0}, 0, {0}};
            char back[32];
            CHECKF(lower_form_set(&a, (lower_form_key)k, values[k][i]) == 0, "%s=%s",
                   lower_form_key_name((lower_form_key)k), values[k][i]);
            lower_form_value(&a, (lower_form_key)k, back, sizeof back);
            CHECKF(!strcmp(back, values[k][i]), "%s: %s read back as %s",
                   lower_form_key_name((lower_form_key)k), values[k][i], back);
        }
        lower_all_forms a = {{0}, 0, {0}};
        CHECKF(lower_form_set(&a, (lower_form_key)k, "spiral") == -1, "%s",
               lower_form_key_name((lower_form_key)k));
    }
    /* the defaults (zero) read as the compile's defaults */
    lower_all_forms d = {{0}, 0, {0}};
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

/* The model the rules see, from a manifest: Qwen3.5 by its linear layers'
 * functions (qwen35_lower.c names them step_sN, prefill_sN), Gemma 3's
 * windows by its config, the head's rows when the head is on the ANE. */
static void test_tally_reads_the_model_from_the_manifest(void) {
    static lower_program_info progs[2];
    static lower_manifest m;
    memset(&m, 0, sizeof m);
    layer_program(&progs[0]);
    m.programs = progs;
    m.n_programs = 1;
    m.cfg.vocab_size = 151936;
    m.lm_head_on_ane = 1;
    lower_forms_tally t;
    lower_forms_tally_init(&t, &m);
    CHECK(!t.of.model.recurrent && !t.of.model.windows && t.of.model.vocab == 151936);
    memset(&progs[1], 0, sizeof progs[1]);
    fn(&progs[1], "step_s1", 1);
    fn(&progs[1], "prefill_s64", 1);
    m.n_programs = 2;
    m.lm_head_on_ane = 0;
    m.cfg.norm_plus_one = 1;
    lower_forms_tally_init(&t, &m);
    CHECK(t.of.model.recurrent && t.of.model.windows && t.of.model.vocab == 0);
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
    lower_all_forms d = {{0}, 0, {0}};
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

/* A profile recording one refusal: value v of key k refused on "dev". */
static json_t *one_refusal(lower_form_key k, const char *v) {
    json_t *doc = json_object(), *rec = json_pack("{s:i, s:i, s:s}", "ok", 0, "refused", 3,
                                                   "error", "InvalidProcedure");
    json_t *key = json_object(), *dev = json_object(), *forms = json_object();
    json_object_set_new(key, v, rec);
    json_object_set_new(dev, lower_form_key_name(k), key);
    json_object_set_new(forms, "dev", dev);
    json_object_set_new(doc, "forms", forms);
    return doc;
}

/* Whether compile's rules (lower_forms_check, which lower_qwen3_compile
 * applies before it lowers anything) take the set. */
static int compile_takes(const lower_all_forms *a) {
    nc_error err;
    return lower_forms_check(&a->forms, a->kernels_per_layer, &a->model, &err) == NC_OK;
}

/* What the recommendation suggests for cur under doc's record of "dev"
 * (its options; *next the set). */
static const char *suggest(const json_t *doc, const lower_all_forms *cur, lower_all_forms *next) {
    static char opts[256];
    char why[1024];
    lower_forms_recommend(doc, "dev", cur, next, why, sizeof why, opts, sizeof opts);
    return opts;
}

/* The cases the old recommendation got wrong, one key at a time: each
 * suggested a set compile refuses ("--attention grouped takes --rope
 * conv", a Qwen3.5 bundle's broadcast-only attention, --kv-update host's
 * 3 kernels per layer). */
static void test_recommend_respects_compile_rules(void) {
    lower_all_forms next;
    /* grouped attention, its conv RoPE refused: matmul is no way out */
    lower_all_forms g = {{0}, 0, {0}};
    g.forms.attention = LOWER_ATTN_GROUPED;
    json_t *doc = one_refusal(LOWER_FK_ROPE, "conv");
    const char *o = suggest(doc, &g, &next);
    CHECKF(!strstr(o, "--rope matmul") && compile_takes(&next), "'%s'", o);
    json_decref(doc);
    /* matmul RoPE, broadcast attention refused: grouped is no way out, nor
     * for a Qwen3.5 bundle (broadcast attention only) */
    lower_all_forms m = {{0}, 0, {0}}, q35 = {{0}, 0, {.recurrent = 1, .vocab = 248320}};
    m.forms.rope = LOWER_ROPE_MATMUL;
    doc = one_refusal(LOWER_FK_ATTENTION, "broadcast");
    o = suggest(doc, &m, &next);
    CHECKF(!strstr(o, "--attention grouped") && compile_takes(&next), "'%s'", o);
    o = suggest(doc, &q35, &next);
    CHECKF(!strstr(o, "--attention grouped") && compile_takes(&next), "'%s'", o);
    json_decref(doc);
    /* --kv-update host at 3 kernels per layer, 3 refused: not 2 */
    lower_all_forms h = {{0}, 3, {0}};
    h.forms.kv_update = LOWER_KV_HOST;
    doc = one_refusal(LOWER_FK_KERNELS_PER_LAYER, "3");
    o = suggest(doc, &h, &next);
    CHECKF(next.kernels_per_layer == 4 && compile_takes(&next), "'%s'", o);
    json_decref(doc);
    /* a move another move allows: host and 3 and 4 kernels refused, the KV
     * update moves to onehot, after which 2 kernels per layer may follow */
    doc = json_loads("{\"forms\": {\"dev\": {"
                     "\"kernels_per_layer\": {\"3\": {\"ok\": 0, \"refused\": 2, \"error\": \"e\"},"
                     "\"4\": {\"ok\": 0, \"refused\": 2, \"error\": \"e\"}},"
                     "\"kv_update\": {\"host\": {\"ok\": 0, \"refused\": 2, \"error\": \"e\"}}}}}",
                     0, NULL);
    CHECK(doc != NULL);
    o = suggest(doc, &h, &next);
    CHECKF(next.kernels_per_layer == 2 && next.forms.kv_update == LOWER_KV_ONEHOT &&
               compile_takes(&next),
           "'%s'", o);
    json_decref(doc);
}

/* Every set compile takes, for a Qwen3 / Llama model, a Qwen3.5 one and
 * a Gemma 3 one (with their vocabularies: the LM head's chunks), with any
 * one of its values refused: whatever the recommendation suggests,
 * compile takes too. */
static void test_every_single_refusal_recommends_what_compile_takes(void) {
    static const lower_forms_model models[] = {
        {0, 0, 151936}, {1, 0, 248320}, {0, 1, 262144}, {0, 0, 0}};
    static const int rows[] = {16384, 8192, 4096, 2048, 1024};
    long sets = 0, suggestions = 0, bad = 0;
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++)
        for (int i = 0; i < 3 * 4 * 3 * 2 * 2 * 5 * 2 * 2 * 2 * 2; i++) {
            int x = i;
            lower_all_forms a = {{0}, 0, models[mi]};
            a.forms.program_split = (lower_program_split)(x % 3), x /= 3;
            a.kernels_per_layer = 1 + x % 4, x /= 4;
            a.forms.kv_update = (lower_kv_update)(x % 3), x /= 3;
            a.forms.rope = (lower_rope_form)(x % 2), x /= 2;
            a.forms.attention = (lower_attention_form)(x % 2), x /= 2;
            a.forms.head_rows = rows[x % 5], x /= 5;
            a.forms.head_split = (lower_head_split)(x % 2), x /= 2;
            a.forms.exp = (lower_exp_form)(x % 2), x /= 2;
            a.forms.matmul_pad = (lower_matmul_pad)(x % 2), x /= 2;
            a.forms.bucket_form = (lower_bucket_form)(x % 2);
            if (!compile_takes(&a)) continue;
            sets++;
            for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
                char v[32], why[1024], opts[256];
                lower_form_value(&a, (lower_form_key)k, v, sizeof v);
                json_t *doc = one_refusal((lower_form_key)k, v);
                lower_all_forms next;
                suggestions +=
                    lower_forms_recommend(doc, "dev", &a, &next, why, sizeof why, opts, sizeof opts) > 0;
                if (!compile_takes(&next) && bad++ < 5)
                    CHECKF(0, "model %zu, %s refused: '%s' is refused by compile", mi,
                           lower_form_key_name((lower_form_key)k), opts);
                json_decref(doc);
            }
        }
    printf("  %ld sets compile takes, %ld suggestions, %ld refused by compile\n", sets,
           suggestions, bad);
    CHECK(sets > 1000 && suggestions > 1000 && bad == 0);
}

int main(void) {
    RUN(test_every_value_round_trips);
    RUN(test_tally_charges_the_forms_a_kernel_holds);
    RUN(test_tally_reads_the_model_from_the_manifest);
    RUN(test_recommend_moves_refused_forms_only);
    RUN(test_recommend_respects_compile_rules);
    RUN(test_every_single_refusal_recommends_what_compile_takes);
    return nc_test_exit_code();
}
