/* The public API (include/nectar.h) against independent references, using
 * nothing but <nectar.h> (and jansson to read the fixtures): Qwen3 ids of a
 * file equal HF tokenizers' and decode back to its bytes; the chat template
 * equals transformers' apply_chat_template; encoder embeddings, fill-mask
 * and classification equal HF's numbers (tools/make_modernbert_fixtures.py);
 * a compiled bundle opens on the mil backend and its embeddings stay within
 * the parity rule of HF's; greedy generation equals HF's greedy ids
 * (tools/make_qwen3_fixtures.py); and the errors a caller can make. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "nectar.h"

#define MB "tests/fixtures/modernbert/"

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = (size_t)n;
    return buf;
}

static void test_version_macros_match_the_library(void) {
    CHECK(!strcmp(nc_version(), NECTAR_VERSION));
    CHECK(nc_version_number() == NECTAR_VERSION_NUMBER);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", NECTAR_VERSION_MAJOR, NECTAR_VERSION_MINOR,
             NECTAR_VERSION_PATCH);
    CHECK(!strcmp(want, NECTAR_VERSION));
    CHECK(!strcmp(nc_status_name(NC_ERR_IO), "io"));
}

/* tests/fixtures/tokenizer/cli: a file with CRLF, tabs, emoji and special
 * tokens, and HF's ids of it under the real Qwen3 tokenizer. */
static void test_tokenize_equals_hf_and_decodes_back(void) {
    nc_error err;
    nc_tokenizer *t;
    CHECK_OK(nc_tokenizer_open("tests/fixtures/qwen3-tokenizer", &t, &err), &err);
    CHECK(nc_tokenizer_vocab_size(t) == 151669);
    CHECK(nc_token_id(t, "<|im_end|>") == 151645);
    size_t len, n;
    char *text = read_text("tests/fixtures/tokenizer/cli/input.txt", &len);
    char *want = read_text("tests/fixtures/tokenizer/cli/ids_qwen3.txt", NULL);
    CHECK(text && want);
    int32_t *ids;
    CHECK_OK(nc_tokenize(t, text, len, 0, &ids, &n, &err), &err);
    char *p = want;
    size_t i = 0;
    for (; i < n; i++) {
        char *end;
        long v = strtol(p, &end, 10);
        CHECKF(end != p && v == ids[i], "id %zu: %d, HF %ld", i, (int)ids[i], v);
        p = end;
    }
    CHECK(strtol(p, &p, 10) == 0 && *p == '\n');
    char *back;
    size_t back_len;
    CHECK_OK(nc_detokenize(t, ids, n, 0, &back, &back_len, &err), &err);
    CHECK(back_len == len && !memcmp(back, text, len));
    nc_free(back);
    nc_free(ids);
    free(text);
    free(want);
    nc_tokenizer_free(t);
}

/* tests/fixtures/chat/cases.jsonl: transformers' renderings with the real
 * Qwen3 template. */
static void test_chat_template_equals_transformers(void) {
    FILE *f = fopen("tests/fixtures/chat/cases.jsonl", "r");
    CHECK(f);
    char line[65536];
    int n_cases = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t je;
        json_t *c = json_loads(line, 0, &je);
        CHECK(c);
        json_t *msgs = json_object_get(c, "messages");
        size_t n = json_array_size(msgs);
        nc_chat_message m[16];
        CHECK(n <= 16);
        for (size_t i = 0; i < n; i++) {
            json_t *o = json_array_get(msgs, i);
            m[i].role = json_string_value(json_object_get(o, "role"));
            m[i].content = json_string_value(json_object_get(o, "content"));
            m[i].reasoning_content = json_string_value(json_object_get(o, "reasoning_content"));
        }
        unsigned flags =
            (json_is_true(json_object_get(c, "add_generation_prompt"))
                 ? NC_CHAT_ADD_GENERATION_PROMPT
                 : 0) |
            (json_is_false(json_object_get(c, "enable_thinking")) ? NC_CHAT_NO_THINKING : 0);
        char *out;
        nc_error err;
        nc_status st = nc_chat_apply_template(m, n, flags, &out, &err);
        const char *want = json_string_value(json_object_get(c, "expected"));
        int same = st == NC_OK && !strcmp(out, want);
        if (!same)
            printf("  case %s: %s\n", json_string_value(json_object_get(c, "name")),
                   st ? err.msg : out);
        if (st == NC_OK) nc_free(out);
        json_decref(c);
        CHECK(same);
        n_cases++;
    }
    fclose(f);
    CHECK(n_cases >= 10);
}

/* The third text of mb_base/ref ("Hello"): CLS pooling (the model's), then
 * normalised, against HF's rows 129..192 of embed_cls_norm.txt. */
static double cosine_to_hf_hello(nc_model *m) {
    float v[64];
    nc_error err;
    if (nc_embed(m, "Hello", v, 64, &err) != NC_OK) {
        printf("  nc_embed: %s\n", err.msg);
        return -2;
    }
    FILE *f = fopen(MB "mb_base/ref/embed_cls_norm.txt", "r");
    double want[192], dot = 0, nv = 0, nw = 0;
    for (int i = 0; f && i < 192; i++)
        if (fscanf(f, "%lf", &want[i]) != 1) return -3;
    if (f) fclose(f);
    for (int i = 0; i < 64; i++) {
        dot += v[i] * want[128 + i];
        nv += (double)v[i] * v[i];
        nw += want[128 + i] * want[128 + i];
    }
    return dot / sqrt(nv * nw);
}

static void test_embed_equals_hf(void) {
    nc_error err;
    nc_model *m;
    CHECK_OK(nc_model_open(MB "mb_base", "cpu", NULL, &m, &err), &err);
    CHECK(nc_model_get_kind(m) == NC_MODEL_ENCODER);
    CHECK(nc_model_embedding_size(m) == 64);
    float v[64];
    CHECK_OK(nc_embed(m, "Hello", v, 64, &err), &err);
    double norm = 0;
    for (int i = 0; i < 64; i++)
        norm += (double)v[i] * v[i];
    FILE *f = fopen(MB "mb_base/ref/embed_cls_norm.txt", "r");
    CHECK(f);
    double want[192];
    for (int i = 0; i < 192; i++)
        CHECK(fscanf(f, "%lf", &want[i]) == 1);
    fclose(f);
    for (int i = 0; i < 64; i++)
        CHECK_NEAR(v[i] / sqrt(norm), want[128 + i], 1e-4);
    /* a wrong output size is an error naming both sizes */
    CHECK(nc_embed(m, "Hello", v, 63, &err) == NC_ERR_INVALID && strstr(err.msg, "63"));
    nc_model_free(m);
}

static void test_fill_mask_equals_hf(void) {
    nc_error err;
    nc_model *m;
    CHECK_OK(nc_model_open(MB "mb_mlm", NULL, NULL, &m, &err), &err);
    json_error_t je;
    json_t *ref = json_load_file(MB "mb_mlm/ref/fill_mask.json", 0, &je);
    CHECK(ref);
    int32_t ids[5];
    float probs[5];
    int n_masks = 0;
    CHECK_OK(nc_fill_mask(m, json_string_value(json_object_get(ref, "text")), 5, ids, probs, 1,
                          &n_masks, &err),
             &err);
    CHECK(n_masks == 1);
    for (int j = 0; j < 5; j++) {
        CHECK(ids[j] == json_integer_value(json_array_get(json_object_get(ref, "ids"), j)));
        CHECK_NEAR(probs[j], json_real_value(json_array_get(json_object_get(ref, "probs"), j)),
                   1e-4);
    }
    json_decref(ref);
    CHECK(nc_fill_mask(m, "no mask here", 5, ids, probs, 1, &n_masks, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "no mask token"));
    nc_model_free(m);
}

static void test_classify_equals_hf(void) {
    nc_error err;
    nc_model *m;
    const char *opts[] = {"threads=1", NULL};
    CHECK_OK(nc_model_open(MB "mm_cls", "cpu", opts, &m, &err), &err);
    CHECK(nc_model_num_labels(m) == 3 && nc_model_label(m, 2) && !nc_model_label(m, 3));
    json_error_t je;
    json_t *ref = json_load_file(MB "mm_cls/ref/classify.json", 0, &je);
    CHECK(ref);
    for (size_t i = 0; i < 3; i++) {
        float p[3];
        const char *text = json_string_value(json_array_get(json_object_get(ref, "texts"), i));
        CHECK_OK(nc_classify(m, text, p, 3, &err), &err);
        json_t *want = json_array_get(json_object_get(ref, "probs"), i);
        for (size_t j = 0; j < 3; j++)
            CHECK_NEAR(p[j], json_real_value(json_array_get(want, j)), 1e-4);
    }
    json_decref(ref);
    nc_model_free(m);
}

static void test_open_errors_name_the_fault(void) {
    nc_error err;
    nc_model *m = (nc_model *)&err;
    CHECK(nc_model_open(MB "mb_base", "gpu", NULL, &m, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "'gpu'") && m == NULL);
    const char *bad_key[] = {"threads=1", "thread=2", NULL};
    CHECK(nc_model_open(MB "mb_base", NULL, bad_key, &m, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "unknown option 'thread'"));
    const char *bad_val[] = {"threads=two", NULL};
    CHECK(nc_model_open(MB "mb_base", NULL, bad_val, &m, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "threads=two"));
    CHECK(nc_model_open("tests/fixtures/no-such-model", NULL, NULL, &m, &err) == NC_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "no-such-model"));
    CHECK(nc_model_open(MB "mb_base", "ane", NULL, &m, &err) == NC_ERR_UNSUPPORTED);
    /* a NULL error record is allowed */
    CHECK(nc_model_open(MB "mb_base", "gpu", NULL, &m, NULL) == NC_ERR_INVALID);
    nc_tokenizer *t;
    CHECK(nc_tokenizer_open("tests/fixtures/no-such-tokenizer", &t, &err) != NC_OK);
    nc_sampling *s = nc_sampling_new();
    CHECK(s);
    CHECK(nc_sampling_set(s, "temperature", -1, &err) == NC_ERR_INVALID);
    CHECK(nc_sampling_set(s, "temprature", 1, &err) == NC_ERR_INVALID &&
          strstr(err.msg, "temprature"));
    CHECK(nc_sampling_add_stop(s, "", &err) == NC_ERR_INVALID);
    nc_sampling_free(s);
    nc_model_free(NULL);
    nc_tokenizer_free(NULL);
    nc_sampling_free(NULL);
}

/* nc_compile an encoder, then run the bundle through the fp16 interpreter:
 * the embedding stays within nectar's parity rule (cosine >= 0.999) of HF's. */
static void test_compiled_encoder_bundle_runs_on_mil(void) {
    char dir[] = "/tmp/nc_api_XXXXXX";
    CHECK(mkdtemp(dir));
    char bundle[64];
    snprintf(bundle, sizeof bundle, "%s/b", dir);
    nc_error err;
    const char *opts[] = {"seqs=32", "batches=1", NULL};
    nc_status st = nc_compile(MB "mb_base", bundle, opts, &err);
    nc_model *m = NULL;
    if (st == NC_OK) st = nc_model_open(bundle, "mil", NULL, &m, &err);
    double cos = st == NC_OK ? cosine_to_hf_hello(m) : -1;
    nc_model_free(m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    CHECK_OK(st, &err);
    CHECKF(cos >= 0.999, "cosine %.6f", cos);
    const char *bad[] = {"seqs=31", NULL};
    CHECK(nc_compile(MB "mb_base", "/tmp/nc_api_never", bad, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "seqs=31") && access("/tmp/nc_api_never", F_OK) != 0);
}

int main(void) {
    RUN(test_version_macros_match_the_library);
    RUN(test_tokenize_equals_hf_and_decodes_back);
    RUN(test_chat_template_equals_transformers);
    RUN(test_embed_equals_hf);
    RUN(test_fill_mask_equals_hf);
    RUN(test_classify_equals_hf);
    RUN(test_open_errors_name_the_fault);
    RUN(test_compiled_encoder_bundle_runs_on_mil);
    return nc_test_exit_code();
}
