/* The tokenizer against Hugging Face `tokenizers`: ids of a multilingual
 * corpus under the real Qwen3 tokenizer (tests/fixtures/qwen3-tokenizer) and
 * under two small committed tokenizers (GPT-2 and Qwen pipelines), HF's
 * decodes of the same ids and of random id sequences, lookups, and the
 * errors for bad tokenizer.json files. Fixtures: tools/make_tokenizer_fixtures.py. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "fixture_lines.h"
#include "text/tokenizer.h"

#define FIX "tests/fixtures/tokenizer/"

static tok_tokenizer *qwen; /* loaded once for the whole binary */
static double qwen_load_s;

static const char *qwen_path(void) {
    return nc_test_fixture_path("qwen3-tokenizer/tokenizer.json");
}

#include <time.h>
/* CPU time of this process: on a shared machine it says more than wall time. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Prints where two id lists first differ. */
static int ids_equal(const int32_t *a, size_t na, const int32_t *b, size_t nb, const char *name) {
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i])
        i++;
    if (i == na && i == nb) return 1;
    printf("  %s: ids differ at %zu (got %zu ids, want %zu): got %d, want %d\n", name, i, na, nb,
           i < na ? a[i] : -1, i < nb ? b[i] : -1);
    return 0;
}

/* Encodes every row's text and compares with the row's ids and decodes. */
static int check_rows(const tok_tokenizer *t, fixture_rows *rows, const char *only_tokenizer) {
    int ok = 1;
    for (size_t r = 0; r < rows->n; r++) {
        const json_t *row = rows->rows[r];
        const char *kind = fixture_str(row, "tokenizer", NULL);
        if (only_tokenizer && (!kind || strcmp(kind, only_tokenizer) != 0)) continue;
        const char *name = fixture_str(row, "name", NULL);
        size_t len, n_want, n_got, dlen, want_dlen;
        const char *text = fixture_str(row, "text", &len);
        int32_t *want = fixture_ids(row, "ids", &n_want), *got = NULL;
        nc_error err;
        if (tok_encode(t, text, len, &got, &n_got, &err) != NC_OK) {
            printf("  %s: encode failed: %s\n", name, err.msg);
            ok = 0;
        } else if (!ids_equal(got, n_got, want, n_want, name)) {
            ok = 0;
        }
        char *dec = NULL;
        const char *want_dec = fixture_str(row, "decoded", &want_dlen);
        if (tok_decode(t, want, n_want, 0, &dec, &dlen, &err) != NC_OK || dlen != want_dlen ||
            memcmp(dec, want_dec, dlen) != 0) {
            printf("  %s: decode differs from HF\n", name);
            ok = 0;
        }
        free(dec);
        const char *want_skip = fixture_str(row, "decoded_skip_special", &want_dlen);
        if (want_skip) {
            dec = NULL;
            if (tok_decode(t, want, n_want, 1, &dec, &dlen, &err) != NC_OK || dlen != want_dlen ||
                memcmp(dec, want_skip, dlen) != 0) {
                printf("  %s: decode(skip_special) differs from HF\n", name);
                ok = 0;
            }
            free(dec);
        }
        free(want);
        free(got);
    }
    return ok;
}

static void test_tokenizer_loads_real_qwen3_file(void) {
    CHECKF(qwen_path(), "tests/fixtures/qwen3-tokenizer/tokenizer.json missing");
    CHECK(qwen != NULL);
    printf("  qwen3 tokenizer.json load: %.3f s CPU\n", qwen_load_s);
    CHECK(tok_vocab_size(qwen) == 151669);
    CHECK(tok_find(qwen, "<|endoftext|>") == 151643);
    CHECK(tok_find(qwen, "<|im_start|>") == 151644);
    CHECK(tok_find(qwen, "<|im_end|>") == 151645);
    CHECK(tok_find(qwen, "<think>") == 151667);
    CHECK(tok_find(qwen, "</think>") == 151668);
    CHECK(tok_find(qwen, "Ġthe") == 279); /* vocabulary spelling */
    CHECK(tok_find(qwen, "no such token at all") == -1);
    CHECK(tok_is_special(qwen, 151645));
    CHECK(!tok_is_special(qwen, 151667)); /* <think> is added but not special */
    CHECK(!tok_is_special(qwen, 279));
    CHECK(!tok_is_special(qwen, -1) && !tok_is_special(qwen, 1 << 30));
    size_t len;
    const char *b = tok_token_bytes(qwen, 279, &len);
    CHECK(b && len == 4 && !memcmp(b, " the", 4));
    b = tok_token_bytes(qwen, 151645, &len);
    CHECK(b && len == 10 && !memcmp(b, "<|im_end|>", 10));
    CHECK(tok_token_bytes(qwen, 151669, &len) == NULL && len == 0);
    CHECK(tok_token_bytes(qwen, -5, NULL) == NULL);
    CHECK(tok_max_token_bytes(qwen) == 128);
}

static void test_tokenizer_matches_hf_on_multilingual_corpus(void) {
    CHECKF(qwen_path(), "tests/fixtures/qwen3-tokenizer/tokenizer.json missing");
    CHECK(qwen != NULL);
    fixture_rows rows;
    CHECK(fixture_rows_load(FIX "corpus.jsonl", &rows) == 0);
    CHECK(rows.n >= 40);
    int ok = check_rows(qwen, &rows, NULL);
    /* Throughput over the whole corpus, repeated (a figure for the report,
     * not a pass/fail criterion). */
    size_t bytes = 0;
    double t0 = now_s();
    for (int rep = 0; rep < 20; rep++)
        for (size_t r = 0; r < rows.n; r++) {
            size_t len, n;
            const char *text = fixture_str(rows.rows[r], "text", &len);
            int32_t *ids;
            if (tok_encode(qwen, text, len, &ids, &n, NULL) == NC_OK) free(ids);
            bytes += len;
        }
    double dt = now_s() - t0;
    printf("  encode throughput: %.2f MB/s CPU (%zu bytes)\n", (double)bytes / dt / 1e6, bytes);
    fixture_rows_free(&rows);
    CHECK(ok);
}

static void test_tokenizer_decode_matches_hf_on_random_ids(void) {
    CHECKF(qwen_path(), "tests/fixtures/qwen3-tokenizer/tokenizer.json missing");
    CHECK(qwen != NULL);
    fixture_rows rows;
    CHECK(fixture_rows_load(FIX "decode_qwen3.jsonl", &rows) == 0);
    CHECK(rows.n > 20);
    int ok = 1;
    for (size_t r = 0; r < rows.n; r++) {
        size_t n, len, want_len;
        int32_t *ids = fixture_ids(rows.rows[r], "ids", &n);
        for (int skip = 0; skip < 2; skip++) {
            const char *want =
                fixture_str(rows.rows[r], skip ? "text_skip_special" : "text", &want_len);
            char *got;
            nc_error err;
            if (tok_decode(qwen, ids, n, skip, &got, &len, &err) != NC_OK) {
                printf("  case %zu: %s\n", r, err.msg);
                ok = 0;
                continue;
            }
            if (len != want_len || memcmp(got, want, len) != 0) {
                printf("  case %zu (skip_special=%d): decode differs from HF\n", r, skip);
                ok = 0;
            }
            CHECK(got[len] == '\0');
            free(got);
        }
        free(ids);
    }
    fixture_rows_free(&rows);
    CHECK(ok);
}

/* Encode then decode gives the text back (the corpus is NFC already except
 * for the rows that test normalisation, which decode to the NFC form). */
static void test_tokenizer_round_trips_corpus(void) {
    CHECKF(qwen_path(), "tests/fixtures/qwen3-tokenizer/tokenizer.json missing");
    CHECK(qwen != NULL);
    fixture_rows rows;
    CHECK(fixture_rows_load(FIX "corpus.jsonl", &rows) == 0);
    int ok = 1;
    for (size_t r = 0; r < rows.n; r++) {
        const char *name = fixture_str(rows.rows[r], "name", NULL);
        size_t len, want_len, n, dlen;
        const char *text = fixture_str(rows.rows[r], "text", &len);
        const char *want = strncmp(name, "nfc_", 4) == 0
                               ? fixture_str(rows.rows[r], "decoded", &want_len)
                               : (want_len = len, text);
        int32_t *ids;
        char *dec;
        CHECK_OK(tok_encode(qwen, text, len, &ids, &n, &(nc_error){0}), &(nc_error){0});
        nc_error err;
        nc_status st = tok_decode(qwen, ids, n, 0, &dec, &dlen, &err);
        free(ids);
        CHECK(st == NC_OK);
        if (dlen != want_len || memcmp(dec, want, dlen) != 0) {
            printf("  %s: round trip differs\n", name);
            ok = 0;
        }
        free(dec);
    }
    fixture_rows_free(&rows);
    CHECK(ok);
}

static void check_small(const char *kind) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s", kind); /* a folder path, as tok_load accepts */
    tok_tokenizer *t;
    nc_error err;
    CHECK_OK(tok_load(path, &t, &err), &err);
    fixture_rows rows;
    int loaded = fixture_rows_load(FIX "small_expected.jsonl", &rows) == 0;
    int ok = loaded && check_rows(t, &rows, kind);
    if (loaded) fixture_rows_free(&rows);
    tok_free(t);
    CHECK(loaded);
    CHECK(ok);
}

static void test_tokenizer_matches_hf_with_gpt2_pipeline_and_added_token_flags(void) {
    check_small("gpt2style");
}

static void test_tokenizer_matches_hf_with_small_qwen_pipeline(void) {
    check_small("qwenstyle");
}

/* Each row overrides fields of the small Qwen-style tokenizer.json (split
 * behaviours, ByteLevel options, normal forms, unk) and lists HF's ids. */
static void test_tokenizer_matches_hf_on_pipeline_variants(void) {
    json_t *base;
    nc_error err;
    CHECK_OK(nc_json_load_file(FIX "qwenstyle/tokenizer.json", &base, &err), &err);
    fixture_rows rows;
    int loaded = fixture_rows_load(FIX "pipelines.jsonl", &rows) == 0;
    int ok = loaded, n_cases = 0;
    for (size_t r = 0; loaded && r < rows.n; r++) {
        const json_t *row = rows.rows[r];
        const char *name = fixture_str(row, "name", NULL);
        json_t *doc = json_deep_copy(base);
        json_object_update(doc, json_object_get(row, "set"));
        json_object_update(json_object_get(doc, "model"), json_object_get(row, "model_set"));
        char *text = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        tok_tokenizer *t;
        if (tok_load_from_memory(text, strlen(text), name, &t, &err) != NC_OK) {
            printf("  %s: %s\n", name, err.msg);
            ok = 0;
            free(text);
            continue;
        }
        free(text);
        const json_t *cases = json_object_get(row, "cases");
        for (size_t c = 0; c < json_array_size(cases); c++) {
            const json_t *cs = json_array_get(cases, c);
            size_t len, n_want, n_got;
            const char *in = fixture_str(cs, "text", &len);
            int32_t *want = fixture_ids(cs, "ids", &n_want), *got = NULL;
            char label[160];
            snprintf(label, sizeof label, "%s case %zu", name, c);
            if (tok_encode(t, in, len, &got, &n_got, &err) != NC_OK) {
                printf("  %s: %s\n", label, err.msg);
                ok = 0;
            } else if (!ids_equal(got, n_got, want, n_want, label)) {
                ok = 0;
            }
            n_cases++;
            free(want);
            free(got);
        }
        tok_free(t);
    }
    if (loaded) fixture_rows_free(&rows);
    json_decref(base);
    CHECK(loaded);
    CHECK(ok);
    CHECK(n_cases >= 100);
}

static uint64_t fnv1a64(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* The bundled demo model's tokenizer (models/demo/, trained with HF
 * tokenizers). Its fixture records a hash of the file it was made from; a
 * retrained tokenizer makes the fixture stale, which is a skip, not a fail. */
static void test_tokenizer_matches_hf_on_demo_model_tokenizer(void) {
    const char *path = "models/demo/tokenizer.json";
    char *raw;
    size_t raw_len;
    if (nc_read_file(path, &raw, &raw_len, NULL) != NC_OK) SKIP("%s not present", path);
    uint64_t h = fnv1a64(raw, raw_len);
    free(raw);
    fixture_rows rows;
    CHECK(fixture_rows_load(FIX "demo_expected.jsonl", &rows) == 0 && rows.n > 1);
    char want_hash[32];
    snprintf(want_hash, sizeof want_hash, "%016llx", (unsigned long long)h);
    const char *have = fixture_str(rows.rows[0], "fnv1a64", NULL);
    if (!have || strcmp(have, want_hash) != 0) {
        fixture_rows_free(&rows);
        SKIP("fixture is stale for %s: rerun tools/make_tokenizer_fixtures.py", path);
    }
    tok_tokenizer *t;
    nc_error err;
    nc_status st = tok_load("models/demo", &t, &err);
    int ok = st == NC_OK;
    if (ok) {
        fixture_rows body = {rows.rows + 1, rows.n - 1};
        ok = check_rows(t, &body, NULL);
        tok_free(t);
    }
    fixture_rows_free(&rows);
    CHECK_OK(st, &err);
    CHECK(ok);
}

static void long_inputs_round_trip(const tok_tokenizer *t) {
    /* 200 KB without any split point: one pre-token for BPE. */
    size_t n = 200000;
    char *s = malloc(n);
    CHECK(s != NULL);
    memset(s, 'a', n);
    int32_t *ids;
    size_t n_ids;
    nc_error err;
    nc_status st = tok_encode(t, s, n, &ids, &n_ids, &err);
    CHECK(st == NC_OK);
    char *dec;
    size_t dlen;
    CHECK_OK(tok_decode(t, ids, n_ids, 0, &dec, &dlen, &err), &err);
    CHECK(dlen == n && memcmp(dec, s, n) == 0);
    CHECK(n_ids < n / 2); /* merged into longer tokens */
    free(dec);
    free(ids);
    /* A long whitespace run exercises \s+(?!\S) backtracking. */
    memset(s, ' ', n);
    s[n - 1] = 'x';
    CHECK_OK(tok_encode(t, s, n, &ids, &n_ids, &err), &err);
    CHECK_OK(tok_decode(t, ids, n_ids, 0, &dec, &dlen, &err), &err);
    CHECK(dlen == n && memcmp(dec, s, n) == 0);
    free(dec);
    free(ids);
    free(s);
}

/* With the real Qwen3 file when present, else the small committed one. */
static void test_tokenizer_long_inputs_are_not_quadratic_and_round_trip(void) {
    if (qwen) {
        long_inputs_round_trip(qwen);
        return;
    }
    tok_tokenizer *t;
    nc_error err;
    CHECK_OK(tok_load(FIX "qwenstyle", &t, &err), &err);
    long_inputs_round_trip(t);
    tok_free(t);
}

/* One tokenizer shared by several threads encoding at once gives every
 * thread HF's ids (all per-call state is the caller's). */
typedef struct thread_job {
    const tok_tokenizer *t;
    const fixture_rows *rows;
    int mismatches;
} thread_job;

static void *encode_all_rows(void *arg) {
    thread_job *j = arg;
    for (int rep = 0; rep < 10; rep++)
        for (size_t r = 0; r < j->rows->n; r++) {
            const json_t *row = j->rows->rows[r];
            if (strcmp(fixture_str(row, "tokenizer", NULL), "qwenstyle") != 0) continue;
            size_t len, n_want, n_got;
            const char *text = fixture_str(row, "text", &len);
            int32_t *want = fixture_ids(row, "ids", &n_want), *got;
            if (tok_encode(j->t, text, len, &got, &n_got, NULL) != NC_OK) {
                j->mismatches++;
            } else {
                j->mismatches +=
                    n_got != n_want || (n_got && memcmp(got, want, n_got * sizeof *got) != 0);
                free(got);
            }
            free(want);
        }
    return NULL;
}

static void test_tokenizer_is_safe_to_share_between_threads(void) {
    tok_tokenizer *t;
    nc_error err;
    CHECK_OK(tok_load(FIX "qwenstyle", &t, &err), &err);
    fixture_rows rows;
    CHECK(fixture_rows_load(FIX "small_expected.jsonl", &rows) == 0);
    enum { N_THREADS = 4 };
    pthread_t th[N_THREADS];
    thread_job jobs[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        jobs[i] = (thread_job){t, &rows, 0};
        pthread_create(&th[i], NULL, encode_all_rows, &jobs[i]);
    }
    int mismatches = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        mismatches += jobs[i].mismatches;
    }
    fixture_rows_free(&rows);
    tok_free(t);
    CHECKF(mismatches == 0, "%d encodes differ from HF", mismatches);
}

static void test_tokenizer_rejects_invalid_utf8_text(void) {
    tok_tokenizer *t;
    nc_error err;
    CHECK_OK(tok_load(FIX "qwenstyle/tokenizer.json", &t, &err), &err);
    int32_t *ids = (int32_t *)1;
    size_t n = 7;
    nc_status st = tok_encode(t, "ok\xC3(", 4, &ids, &n, &err);
    tok_free(t);
    CHECK(st == NC_ERR_INVALID);
    CHECK(ids == NULL && n == 0);
    CHECKF(strstr(err.msg, "byte 2") != NULL, "%s", err.msg);
}

static void expect_load_error(const char *json, nc_status want, const char *needle) {
    tok_tokenizer *t = (tok_tokenizer *)1;
    nc_error err;
    nc_status st = tok_load_from_memory(json, strlen(json), "bad.json", &t, &err);
    CHECKF(st == want, "status %s for %s: %s", nc_status_name(st), json, err.msg);
    CHECK(t == NULL);
    CHECKF(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
    CHECK(strchr(err.msg, '\n') == NULL);
}

#define BYTELEVEL_TAIL "\"decoder\": {\"type\": \"ByteLevel\"}}"

static void test_tokenizer_rejects_bad_tokenizer_json(void) {
    expect_load_error("{\"model\": ", NC_ERR_FORMAT, "bad.json:1:");
    expect_load_error("[]", NC_ERR_FORMAT, "must be a JSON object");
    expect_load_error("{}", NC_ERR_FORMAT, "missing object 'model'");
    expect_load_error("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", NC_ERR_UNSUPPORTED,
                      "WordPiece");
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": [1]}}", NC_ERR_FORMAT,
                      "model.vocab must be an object");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": \"x\"}}}", NC_ERR_FORMAT,
                      "model.vocab['a']");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": -1}}}", NC_ERR_RANGE, "out of range");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a c\"]}}",
                      NC_ERR_FORMAT, "model.merges[0]: right token");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}",
                      NC_ERR_FORMAT, "merged token");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": [\"ab\"]}}", NC_ERR_FORMAT,
                      "not two tokens");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": [[\"a\"]]}}", NC_ERR_FORMAT,
                      "model.merges[0]");
    expect_load_error("{\"model\": {\"vocab\": {}}, \"decoder\": {\"type\": \"ByteLevel\"}}",
                      NC_ERR_FORMAT, "vocabulary is empty");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": 0}}}", NC_ERR_UNSUPPORTED,
                      "decoder must be ByteLevel");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": 0}}, \"normalizer\": {\"type\": "
                      "\"Lowercase\"}, " BYTELEVEL_TAIL,
                      NC_ERR_UNSUPPORTED, "normalizer type 'Lowercase'");
    expect_load_error(
        "{\"model\": {\"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": \"Split\", "
        "\"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}, " BYTELEVEL_TAIL,
        NC_ERR_FORMAT, "pre_tokenizer regex");
    expect_load_error("{\"model\": {\"vocab\": {\"a\": 0}}, \"pre_tokenizer\": {\"type\": "
                      "\"Metaspace\"}, " BYTELEVEL_TAIL,
                      NC_ERR_UNSUPPORTED, "Metaspace");
    expect_load_error(
        "{\"model\": {\"vocab\": {\"a\": 0}}, \"added_tokens\": [{\"id\": 1}], " BYTELEVEL_TAIL,
        NC_ERR_NOT_FOUND, "added_tokens[0]: missing field 'content'");
    expect_load_error(
        "{\"model\": {\"vocab\": {\"a\": 0}, \"byte_fallback\": true}, " BYTELEVEL_TAIL,
        NC_ERR_UNSUPPORTED, "byte_fallback");
}

static void test_tokenizer_load_reports_missing_paths(void) {
    tok_tokenizer *t;
    nc_error err;
    CHECK(tok_load("tests/fixtures/tokenizer/no-such-dir", &t, &err) == NC_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "no-such-dir") != NULL);
    CHECK(tok_load("tests/fixtures", &t, &err) == NC_ERR_NOT_FOUND);
    CHECKF(strstr(err.msg, "no tokenizer.json") != NULL, "%s", err.msg);
    /* Not JSON at all: the message names file, line and column. */
    CHECK(tok_load("tests/text/fixture_lines.h", &t, &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "tests/text/fixture_lines.h:1:") != NULL, "%s", err.msg);
}

int main(void) {
    if (qwen_path()) {
        nc_error err;
        double t0 = now_s();
        if (tok_load(qwen_path(), &qwen, &err) != NC_OK) printf("  load failed: %s\n", err.msg);
        qwen_load_s = now_s() - t0;
    }
    RUN(test_tokenizer_loads_real_qwen3_file);
    RUN(test_tokenizer_matches_hf_on_multilingual_corpus);
    RUN(test_tokenizer_decode_matches_hf_on_random_ids);
    RUN(test_tokenizer_round_trips_corpus);
    RUN(test_tokenizer_matches_hf_with_gpt2_pipeline_and_added_token_flags);
    RUN(test_tokenizer_matches_hf_with_small_qwen_pipeline);
    RUN(test_tokenizer_matches_hf_on_pipeline_variants);
    RUN(test_tokenizer_matches_hf_on_demo_model_tokenizer);
    RUN(test_tokenizer_long_inputs_are_not_quadratic_and_round_trip);
    RUN(test_tokenizer_is_safe_to_share_between_threads);
    RUN(test_tokenizer_rejects_invalid_utf8_text);
    RUN(test_tokenizer_rejects_bad_tokenizer_json);
    RUN(test_tokenizer_load_reports_missing_paths);
    tok_free(qwen);
    return nc_test_exit_code();
}
