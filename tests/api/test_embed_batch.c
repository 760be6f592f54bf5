/* Batched encoder calls of the public API against independent references:
 * nc_embed_batch on sentence-transformers folders saved by
 * sentence-transformers itself equals SentenceTransformer(dir).encode, one
 * folder per pooling mode (cls in the older on-disk form with truncation to
 * 16 tokens, mean without the prompt and a default prompt, max and last
 * token with Normalize, weighted mean; tools/make_st_fixtures.py); a batch
 * equals the same texts one at a time; token-id rows equal their text;
 * nc_classify_pairs equals HF's cross-encoder logits on (query, document)
 * pairs; unsupported modules and bad calls are one clear error. Uses only
 * <nectar.h> (and jansson to read the fixtures). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "nectar.h"

#define ST "tests/fixtures/st/"

/* |a - b| <= 1e-4 + 1e-4 |b| everywhere: fp32 sums in another order. */
static int close_to(const float *a, const double *b, size_t n, size_t *bad) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)a[i] - b[i]) <= 1e-4 + 1e-4 * fabs(b[i]))) {
            *bad = i;
            return 0;
        }
    return 1;
}

typedef struct ref {
    json_t *root;
    const char **texts;
    size_t n;
    double *emb;
    size_t d;
} ref;

static int load_ref(const char *dir, ref *r) {
    char path[512];
    snprintf(path, sizeof path, "%s/ref.json", dir);
    memset(r, 0, sizeof *r);
    r->root = json_load_file(path, 0, NULL);
    if (!r->root) return 0;
    json_t *texts = json_object_get(r->root, "texts"), *emb = json_object_get(r->root, "embeddings");
    r->n = json_array_size(texts);
    r->d = json_array_size(json_array_get(emb, 0));
    r->texts = calloc(r->n, sizeof *r->texts);
    r->emb = calloc(r->n * r->d, sizeof *r->emb);
    for (size_t i = 0; i < r->n; i++) {
        r->texts[i] = json_string_value(json_array_get(texts, i));
        for (size_t j = 0; j < r->d; j++)
            r->emb[i * r->d + j] = json_number_value(json_array_get(json_array_get(emb, i), j));
    }
    return r->n > 0 && r->d > 0;
}

static void free_ref(ref *r) {
    json_decref(r->root);
    free(r->texts);
    free(r->emb);
}

/* One fixture: the whole list in batches of 2 equals the reference. */
static void check_folder(const char *name) {
    char dir[256];
    snprintf(dir, sizeof dir, ST "%s", name);
    ref r;
    CHECKF(load_ref(dir, &r), "%s/ref.json", dir);
    nc_error err = {0};
    nc_model *m = NULL;
    nc_status st = nc_model_open(dir, NULL, NULL, &m, &err);
    if (st != NC_OK) free_ref(&r);
    CHECKF(st == NC_OK, "%s", err.msg);
    size_t d = (size_t)nc_model_embedding_size(m);
    float *out = calloc(r.n * d, sizeof *out);
    nc_embed_options o = {0};
    o.batch_size = 2;
    size_t n_tokens = 0, bad = 0;
    st = nc_embed_batch(m, r.texts, r.n, &o, out, r.n * d, &n_tokens, &err);
    int ok = st == NC_OK && d == r.d && close_to(out, r.emb, r.n * d, &bad);
    if (!ok && st == NC_OK)
        printf("  %s: input %zu dim %zu: %.7g, sentence-transformers %.7g\n", name, bad / d,
               bad % d, (double)out[bad], r.emb[bad]);
    /* one at a time: the same vectors (padding does not leak into a row) */
    for (size_t i = 0; ok && i < r.n; i++) {
        float *one = calloc(d, sizeof *one);
        ok = nc_embed_batch(m, &r.texts[i], 1, NULL, one, d, NULL, &err) == NC_OK &&
             close_to(one, r.emb + i * d, d, &bad);
        free(one);
    }
    free(out);
    nc_model_free(m);
    free_ref(&r);
    CHECKF(st == NC_OK, "%s", err.msg);
    CHECKF(ok, "%s differs from SentenceTransformer.encode", name);
    CHECK(n_tokens > r.n);
}

static void test_cls_legacy_form_truncated(void) {
    check_folder("st_cls");
}
static void test_mean_default_prompt_excluded(void) {
    check_folder("st_mean");
}
static void test_max_normalized(void) {
    check_folder("st_max");
}
static void test_lasttoken_normalized(void) {
    check_folder("st_last");
}
static void test_weightedmean(void) {
    check_folder("st_wmean");
}

/* Token-id rows (no special tokens) give their text's embedding; nc_embed
 * (one text) is the batch call's first row. */
static void test_token_rows_equal_their_text(void) {
    ref r;
    CHECK(load_ref(ST "st_max", &r));
    nc_error err = {0};
    nc_model *m = NULL;
    CHECK_OK(nc_model_open(ST "st_max", NULL, NULL, &m, &err), &err);
    const nc_tokenizer *t = nc_model_tokenizer(m);
    size_t d = r.d, n = 2;
    int32_t *ids[2];
    size_t n_ids[2];
    for (size_t i = 0; i < n; i++)
        nc_tokenize(t, r.texts[i], strlen(r.texts[i]), 0, &ids[i], &n_ids[i], &err);
    float *out = calloc(n * d, sizeof *out), *one = calloc(d, sizeof *one);
    size_t bad = 0;
    nc_status st = nc_embed_tokens(m, (const int32_t *const *)ids, n_ids, n, NULL, out, n * d,
                                   NULL, &err);
    int ok = st == NC_OK && close_to(out, r.emb, n * d, &bad);
    int ok1 = nc_embed(m, r.texts[0], one, d, &err) == NC_OK && close_to(one, r.emb, d, &bad);
    /* out of the vocabulary: an error naming the row */
    int32_t big = 100000;
    const int32_t *rows[1] = {&big};
    size_t one_id = 1;
    nc_error e2 = {0};
    nc_status bst = nc_embed_tokens(m, rows, &one_id, 1, NULL, out, d, NULL, &e2);
    for (size_t i = 0; i < n; i++)
        nc_free(ids[i]);
    free(out);
    free(one);
    nc_model_free(m);
    free_ref(&r);
    CHECKF(st == NC_OK, "%s", err.msg);
    CHECK(ok);
    CHECK(ok1);
    CHECK(bst == NC_ERR_INVALID);
    CHECKF(strstr(e2.msg, "input 0") && strstr(e2.msg, "100000"), "%s", e2.msg);
}

static void test_classify_pairs_equal_hf_cross_encoder(void) {
    json_t *root = json_load_file(ST "rerank/ref.json", 0, NULL);
    CHECK(root);
    json_t *docs = json_object_get(root, "documents"), *logits = json_object_get(root, "logits");
    size_t n = json_array_size(docs);
    const char *q = json_string_value(json_object_get(root, "query"));
    const char **first = calloc(n, sizeof *first), **second = calloc(n, sizeof *second);
    double *want = calloc(n, sizeof *want);
    for (size_t i = 0; i < n; i++) {
        first[i] = q;
        second[i] = json_string_value(json_array_get(docs, i));
        want[i] = json_number_value(json_array_get(logits, i));
    }
    nc_error err = {0};
    nc_model *m = NULL;
    nc_status st = nc_model_open(ST "rerank", NULL, NULL, &m, &err);
    float *got = calloc(n, sizeof *got);
    size_t bad = 0, n_tok = 0;
    if (st == NC_OK) st = nc_classify_pairs(m, first, second, n, got, n, &n_tok, &err);
    int ok = st == NC_OK && close_to(got, want, n, &bad);
    if (!ok && st == NC_OK) printf("  pair %zu: %.7g, HF %.7g\n", bad, (double)got[bad], want[bad]);
    nc_model_free(m);
    free(got);
    free(want);
    free(first);
    free(second);
    json_decref(root);
    CHECKF(st == NC_OK, "%s", err.msg);
    CHECK(ok);
    CHECK(n_tok > 2 * n);
}

/* A folder with a module nectar does not run, or a prompt it does not
 * have: one line naming the file or the prompt. */
static void test_unsupported_modules_and_prompts(void) {
    char dir[] = "/tmp/nectar_st_XXXXXX";
    CHECK(mkdtemp(dir));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -r " ST "st_max/. %s/ && sed -i.bak 's/normalize.Normalize/dense.Dense/' %s/modules.json",
             dir, dir);
    CHECK(system(cmd) == 0);
    nc_error err = {0};
    nc_model *m = NULL;
    nc_status st = nc_model_open(dir, NULL, NULL, &m, &err);
    nc_model_free(m);
    nc_error e2 = {0};
    nc_model *m2 = NULL;
    CHECK_OK(nc_model_open(ST "st_mean", NULL, NULL, &m2, &e2), &e2);
    float v[32];
    const char *text = "hi";
    nc_embed_options o = {0};
    o.prompt_name = "passage";
    nc_status pst = nc_embed_batch(m2, &text, 1, &o, v, 32, NULL, &e2);
    nc_model_free(m2);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    CHECK(st == NC_ERR_UNSUPPORTED);
    CHECKF(strstr(err.msg, "modules.json") && strstr(err.msg, "Dense"), "%s", err.msg);
    CHECK(pst == NC_ERR_NOT_FOUND);
    CHECKF(strstr(e2.msg, "'passage'"), "%s", e2.msg);
}

/* A broken sentence-transformers file is one line naming the file and the
 * field: an unknown pooling mode, two modes at once, modules.json that is
 * not a list, a default prompt that is not among the prompts. */
static void test_bad_st_files_name_the_file(void) {
    static const struct {
        const char *file, *text, *want;
    } cases[] = {
        {"1_Pooling/config.json", "{\"pooling_mode\": \"median\"}", "'median'"},
        {"1_Pooling/config.json",
         "{\"pooling_mode_cls_token\": true, \"pooling_mode_max_tokens\": true}",
         "2 pooling modes"},
        {"modules.json", "{\"0\": 1}", "array of modules"},
        {"config_sentence_transformers.json",
         "{\"prompts\": {\"query\": \"q: \"}, \"default_prompt_name\": \"doc\"}",
         "default_prompt_name 'doc'"},
        {"sentence_bert_config.json", "{\"max_seq_length\": -3}", "max_seq_length"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char dir[] = "/tmp/nectar_st_bad_XXXXXX", cmd[1024], path[512];
        CHECK(mkdtemp(dir));
        snprintf(cmd, sizeof cmd, "cp -r " ST "st_max/. %s/", dir);
        CHECK(system(cmd) == 0);
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].file);
        FILE *f = fopen(path, "w");
        CHECK(f);
        fputs(cases[i].text, f);
        fclose(f);
        nc_error err = {0};
        nc_model *m = NULL;
        nc_status st = nc_model_open(dir, NULL, NULL, &m, &err);
        nc_model_free(m);
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        CHECK(system(cmd) == 0);
        CHECKF(st != NC_OK && strstr(err.msg, cases[i].file) && strstr(err.msg, cases[i].want) &&
                   !strchr(err.msg, '\n'),
               "case %zu: %s", i, err.msg);
    }
}

int main(void) {
    RUN(test_cls_legacy_form_truncated);
    RUN(test_mean_default_prompt_excluded);
    RUN(test_max_normalized);
    RUN(test_lasttoken_normalized);
    RUN(test_weightedmean);
    RUN(test_token_rows_equal_their_text);
    RUN(test_classify_pairs_equal_hf_cross_encoder);
    RUN(test_unsupported_modules_and_prompts);
    RUN(test_bad_st_files_name_the_file);
    return nc_test_exit_code();
}
