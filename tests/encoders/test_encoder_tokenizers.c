/* The encoder tokenizers byte-exact with HF tokenizers: the ModernBERT-style
 * byte-level BPE with its TemplateProcessing post-processor ([CLS] ... [SEP],
 * [MASK] with lstrip) and the Gemma/mmBERT-style BPE with byte fallback and
 * "▁" spaces (and its Llama-2 variant with Prepend and Strip).
 * tests/fixtures/modernbert/tok_*.jsonl (tools/ make_modernbert_fixtures.py) hold, per text, HF's
 * ids with and without add_special_tokens and HF's decode with and without skip_special_tokens. */
#include "../test.h"
#include "base/json.h"
#include "text/tokenizer.h"

#define FIX "tests/fixtures/modernbert/"

static int same_ids(const int32_t *a, size_t n, const json_t *want) {
    if (json_array_size(want) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] != json_integer_value(json_array_get(want, i))) return 0;
    return 1;
}

static void check_file(const char *name) {
    char path[256];
    nc_error err = {0};
    tok_tokenizer *t = NULL;
    snprintf(path, sizeof path, FIX "%s", name);
    CHECK_OK(tok_load(path, &t, &err), &err);
    snprintf(path, sizeof path, FIX "%s.jsonl", name);
    FILE *f = fopen(path, "r");
    CHECK(f);
    char line[8192];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o) continue;
        const json_t *jt = json_object_get(o, "text");
        const char *text = json_string_value(jt);
        size_t len = json_string_length(jt);
        int32_t *ids = NULL, *plain = NULL;
        size_t n_ids = 0, n_plain = 0;
        char *dec = NULL, *dec_all = NULL;
        int ok = tok_encode_special(t, text, len, &ids, &n_ids, &err) == NC_OK &&
                 same_ids(ids, n_ids, json_object_get(o, "ids")) &&
                 tok_encode(t, text, len, &plain, &n_plain, &err) == NC_OK &&
                 same_ids(plain, n_plain, json_object_get(o, "ids_plain")) &&
                 tok_decode(t, ids, n_ids, 1, &dec, NULL, &err) == NC_OK &&
                 !strcmp(dec, json_string_value(json_object_get(o, "decoded"))) &&
                 tok_decode(t, ids, n_ids, 0, &dec_all, NULL, &err) == NC_OK &&
                 !strcmp(dec_all, json_string_value(json_object_get(o, "decoded_all")));
        if (!ok) {
            printf("  %s: mismatch on %s (got %zu ids, decoded '%s')\n", name, text, n_ids,
                   dec ? dec : "?");
            bad++;
        }
        n++;
        free(ids);
        free(plain);
        free(dec);
        free(dec_all);
        json_decref(o);
    }
    fclose(f);
    tok_free(t);
    printf("  %s: %d texts, %d mismatches\n", name, n, bad);
    CHECK(n >= 10 && bad == 0);
}

static void test_bytelevel_bpe_with_template_matches_hf(void) {
    check_file("tok_bytelevel");
}

static void test_sentencepiece_bpe_byte_fallback_matches_hf(void) {
    check_file("tok_spbpe");
}

static void test_llama_style_prepend_and_strip_matches_hf(void) {
    check_file("tok_llamasp");
}

/* A run of byte tokens that is not UTF-8 decodes to one U+FFFD per token
 * (HF's ByteFallback; checked against tokenizers 0.23). */
static void test_byte_fallback_decode_invalid_runs(void) {
    nc_error err = {0};
    tok_tokenizer *t = NULL;
    CHECK_OK(tok_load(FIX "tok_spbpe", &t, &err), &err);
    int32_t e2 = tok_find(t, "<0xE2>"), x82 = tok_find(t, "<0x82>"), a = tok_find(t, "<0x41>");
    CHECK(e2 >= 0 && x82 >= 0 && a >= 0);
    int32_t ids[3] = {e2, x82, a};
    char *s = NULL;
    CHECK_OK(tok_decode(t, ids, 3, 0, &s, NULL, &err), &err);
    int ok = !strcmp(s, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); /* HF: 3 x U+FFFD */
    free(s);
    tok_free(t);
    CHECK(ok);
}

int main(void) {
    RUN(test_bytelevel_bpe_with_template_matches_hf);
    RUN(test_sentencepiece_bpe_byte_fallback_matches_hf);
    RUN(test_llama_style_prepend_and_strip_matches_hf);
    RUN(test_byte_fallback_decode_invalid_runs);
    return nc_test_exit_code();
}
