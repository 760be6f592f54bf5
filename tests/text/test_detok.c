/* The streaming detokenizer: characters split across byte tokens are held
 * back until complete, nothing emitted mid-stream is invalid UTF-8, and
 * the concatenated stream equals HF's decode of the same ids (fixtures from
 * tools/make_tokenizer_fixtures.py; the Qwen3 cases use tests/fixtures/qwen3-tokenizer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "fixture_lines.h"
#include "text/detok.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

static tok_tokenizer *small;

/* The id of the token that stands for the single byte b. */
static int32_t byte_token(const tok_tokenizer *t, unsigned char b) {
    for (int32_t id = 0; id < tok_vocab_size(t); id++) {
        size_t len;
        const char *s = tok_token_bytes(t, id, &len);
        if (s && len == 1 && (unsigned char)s[0] == b) return id;
    }
    return -1;
}

static int is_valid_utf8(const char *s, size_t n) {
    return tok_utf8_valid_prefix((const unsigned char *)s, n) == n;
}

static void test_detok_holds_back_split_multibyte_characters(void) {
    CHECK(small != NULL);
    char out[512];
    tok_stream s;
    tok_stream_init(&s, small);
    CHECK(tok_stream_cap(small) <= sizeof out);
    /* U+4F60 "你" = E4 BD A0: nothing until the third byte. */
    CHECK(tok_stream_push(&s, byte_token(small, 0xE4), out, sizeof out) == 0 && out[0] == '\0');
    CHECK(tok_stream_push(&s, byte_token(small, 0xBD), out, sizeof out) == 0);
    CHECK(tok_stream_push(&s, byte_token(small, 0xA0), out, sizeof out) == 3);
    CHECK(!strcmp(out, "\xE4\xBD\xA0"));
    /* U+1F600 (4 bytes) after an ASCII byte: "A" at once, the emoji at the end. */
    CHECK(tok_stream_push(&s, byte_token(small, 'A'), out, sizeof out) == 1 && !strcmp(out, "A"));
    CHECK(tok_stream_push(&s, byte_token(small, 0xF0), out, sizeof out) == 0);
    CHECK(tok_stream_push(&s, byte_token(small, 0x9F), out, sizeof out) == 0);
    CHECK(tok_stream_push(&s, byte_token(small, 0x98), out, sizeof out) == 0);
    CHECK(tok_stream_push(&s, byte_token(small, 0x80), out, sizeof out) == 4);
    CHECK(!strcmp(out, "\xF0\x9F\x98\x80"));
    CHECK(tok_stream_flush(&s, out, sizeof out) == 0);
}

static void test_detok_replaces_invalid_bytes_like_hf(void) {
    CHECK(small != NULL);
    char out[512];
    tok_stream s;
    tok_stream_init(&s, small);
    /* A byte that can never start a character is replaced at once. */
    CHECK(tok_stream_push(&s, byte_token(small, 0xFF), out, sizeof out) == 3);
    CHECK(!strcmp(out, "\xEF\xBF\xBD"));
    /* E4 then 'A': the held byte becomes U+FFFD, followed by "A". */
    CHECK(tok_stream_push(&s, byte_token(small, 0xE4), out, sizeof out) == 0);
    CHECK(tok_stream_push(&s, byte_token(small, 'A'), out, sizeof out) == 4);
    CHECK(!strcmp(out, "\xEF\xBF\xBD"
                       "A"));
    /* An incomplete character at the end comes out of flush as one U+FFFD. */
    CHECK(tok_stream_push(&s, byte_token(small, 0xF0), out, sizeof out) == 0);
    CHECK(tok_stream_push(&s, byte_token(small, 0x9F), out, sizeof out) == 0);
    CHECK(tok_stream_flush(&s, out, sizeof out) == 3);
    CHECK(!strcmp(out, "\xEF\xBF\xBD"));
    CHECK(tok_stream_flush(&s, out, sizeof out) == 0);
    /* An invalid id adds nothing; a tiny buffer is not overrun. */
    CHECK(tok_stream_push(&s, -1, out, sizeof out) == 0);
    CHECK(tok_stream_push(&s, 1 << 30, out, sizeof out) == 0);
    char tiny[1] = {'x'};
    CHECK(tok_stream_push(&s, byte_token(small, 'A'), tiny, sizeof tiny) == 0 && tiny[0] == '\0');
    CHECK(tok_stream_push(&s, byte_token(small, 'A'), tiny, 0) == 0);
}

/* Streams ids one at a time; checks every piece is valid UTF-8 and the
 * whole equals want. */
static int stream_equals(const tok_tokenizer *t, const int32_t *ids, size_t n, const char *want,
                         size_t want_len) {
    size_t cap = tok_stream_cap(t), total = 0;
    char *out = malloc(cap), *all = malloc(3 * (n + 1) * (tok_max_token_bytes(t) + 3) + 1);
    tok_stream s;
    tok_stream_init(&s, t);
    int ok = 1;
    for (size_t i = 0; i <= n; i++) {
        size_t m = i < n ? tok_stream_push(&s, ids[i], out, cap) : tok_stream_flush(&s, out, cap);
        if (!is_valid_utf8(out, m) || strlen(out) > m) ok = 0;
        memcpy(all + total, out, m);
        total += m;
    }
    ok = ok && total == want_len && memcmp(all, want, total) == 0;
    free(out);
    free(all);
    return ok;
}

static void test_detok_stream_equals_hf_decode_on_random_ids(void) {
    const char *qwen_path = nc_test_fixture_path("qwen3-tokenizer/tokenizer.json");
    CHECKF(qwen_path, "tests/fixtures/qwen3-tokenizer/tokenizer.json missing");
    tok_tokenizer *t;
    nc_error err;
    CHECK_OK(tok_load(qwen_path, &t, &err), &err);
    fixture_rows rows;
    int ok = fixture_rows_load("tests/fixtures/tokenizer/decode_qwen3.jsonl", &rows) == 0;
    for (size_t r = 0; ok && r < rows.n; r++) {
        size_t n, want_len;
        int32_t *ids = fixture_ids(rows.rows[r], "ids", &n);
        const char *want = fixture_str(rows.rows[r], "text", &want_len);
        if (!stream_equals(t, ids, n, want, want_len)) {
            printf("  case %zu: stream differs from HF decode\n", r);
            ok = 0;
        }
        free(ids);
    }
    fixture_rows_free(&rows);
    tok_free(t);
    CHECK(ok);
}

static void test_detok_stream_equals_hf_decode_on_small_tokenizer_corpus(void) {
    CHECK(small != NULL);
    fixture_rows rows;
    CHECK(fixture_rows_load("tests/fixtures/tokenizer/small_expected.jsonl", &rows) == 0);
    int ok = 1, n_checked = 0;
    for (size_t r = 0; r < rows.n; r++) {
        if (strcmp(fixture_str(rows.rows[r], "tokenizer", NULL), "qwenstyle") != 0) continue;
        size_t n, want_len;
        int32_t *ids = fixture_ids(rows.rows[r], "ids", &n);
        const char *want = fixture_str(rows.rows[r], "decoded", &want_len);
        if (!stream_equals(small, ids, n, want, want_len)) {
            printf("  %s: stream differs from HF decode\n",
                   fixture_str(rows.rows[r], "name", NULL));
            ok = 0;
        }
        n_checked++;
        free(ids);
    }
    fixture_rows_free(&rows);
    CHECK(ok);
    CHECK(n_checked > 30);
}

int main(void) {
    nc_error err;
    if (tok_load("tests/fixtures/tokenizer/qwenstyle", &small, &err) != NC_OK)
        printf("  %s\n", err.msg);
    RUN(test_detok_holds_back_split_multibyte_characters);
    RUN(test_detok_replaces_invalid_bytes_like_hf);
    RUN(test_detok_stream_equals_hf_decode_on_random_ids);
    RUN(test_detok_stream_equals_hf_decode_on_small_tokenizer_corpus);
    tok_free(small);
    return nc_test_exit_code();
}
