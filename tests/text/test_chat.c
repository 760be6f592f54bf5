/* The C rendering of the Qwen3, Qwen3.5, Llama 3 and Gemma 3 chat templates is
 * byte-identical to transformers' apply_chat_template(..., tokenize=False)
 * with the official templates, over the committed cases in
 * tests/fixtures/chat/cases.jsonl (tools/make_tokenizer_fixtures.py),
 * qwen35_cases.jsonl (tools/make_qwen35_fixtures.py), llama3_cases.jsonl
 * (tools/make_llama3_fixtures.py) and gemma3_cases.jsonl
 * (tools/make_gemma3_fixtures.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "fixture_lines.h"
#include "text/chat.h"

/* Shows the first differing byte with some context. */
static void show_diff(const char *name, const char *got, const char *want) {
    size_t i = 0;
    while (got[i] && got[i] == want[i])
        i++;
    size_t from = i > 20 ? i - 20 : 0;
    printf("  %s: differs at byte %zu\n    got:  '%.*s'\n    want: '%.*s'\n", name, i, 40,
           got + from, 40, want + from);
}

/* Rows with "expected" must render to it; rows with "error" (the template
 * raised) must fail. */
static void check_cases(const char *path, chat_family f) {
    fixture_rows rows;
    CHECK(fixture_rows_load(path, &rows) == 0);
    CHECK(rows.n >= 15);
    int ok = 1;
    for (size_t r = 0; r < rows.n; r++) {
        const json_t *row = rows.rows[r];
        const json_t *msgs = json_object_get(row, "messages");
        size_t n = json_array_size(msgs);
        chat_message *m = calloc(n, sizeof *m);
        for (size_t i = 0; i < n; i++) {
            const json_t *o = json_array_get(msgs, i);
            m[i].role = json_string_value(json_object_get(o, "role"));
            m[i].content = json_string_value(json_object_get(o, "content"));
            m[i].reasoning_content = json_string_value(json_object_get(o, "reasoning_content"));
        }
        chat_options opt = {json_is_true(json_object_get(row, "add_generation_prompt")),
                            json_is_true(json_object_get(row, "enable_thinking")), 0};
        char *got;
        nc_error err;
        const char *name = fixture_str(row, "name", NULL),
                   *want = fixture_str(row, "expected", NULL);
        if (json_object_get(row, "error")) {
            if (chat_render_family(f, m, n, &opt, NULL, &got, &err) == NC_OK) {
                printf("  %s: rendered; the template raises '%s'\n", name,
                       fixture_str(row, "error", NULL));
                free(got);
                ok = 0;
            }
        } else if (chat_render_family(f, m, n, &opt, NULL, &got, &err) != NC_OK) {
            printf("  %s: %s\n", name, err.msg);
            ok = 0;
        } else {
            if (strcmp(got, want) != 0) {
                show_diff(name, got, want);
                ok = 0;
            }
            free(got);
        }
        free(m);
    }
    fixture_rows_free(&rows);
    CHECK(ok);
}

static void test_chat_template_matches_transformers_byte_for_byte(void) {
    check_cases("tests/fixtures/chat/cases.jsonl", CHAT_QWEN3);
}

/* Llama 3.1's template without tools (system turn with the date lines,
 * trimmed contents, tool results as JSON strings), rows by
 * tools/make_llama3_fixtures.py. */
static void test_llama3_chat_template_matches_transformers_byte_for_byte(void) {
    check_cases("tests/fixtures/chat/llama3_cases.jsonl", CHAT_LLAMA3);
}

/* Gemma 3's template (<bos>, the system message folded into the first
 * turn, "model" turns, trimmed contents; non-alternating conversations
 * refused as the template raises), rows by tools/make_gemma3_fixtures.py. */
static void test_gemma3_chat_template_matches_transformers_byte_for_byte(void) {
    check_cases("tests/fixtures/chat/gemma3_cases.jsonl", CHAT_GEMMA3);
}

/* Qwen3.5's template (tests/fixtures/qwen35/chat_template.jinja), rows by
 * tools/make_qwen35_fixtures.py. */
static void test_qwen35_chat_template_matches_transformers_byte_for_byte(void) {
    check_cases("tests/fixtures/chat/qwen35_cases.jsonl", CHAT_QWEN35);
}

static void test_chat_defaults_and_errors(void) {
    chat_message m[2] = {{"user", "hi", NULL}, {NULL, "x", NULL}};
    char *out;
    nc_error err;
    CHECK_OK(chat_render(m, 1, NULL, &out, &err), &err); /* NULL options: HF defaults */
    CHECK(!strcmp(out, "<|im_start|>user\nhi<|im_end|>\n"));
    free(out);
    CHECK(chat_render(m, 0, NULL, &out, &err) == NC_ERR_INVALID && out == NULL);
    CHECK(chat_render(m, 2, NULL, &out, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "message 1") != NULL);
    /* Unknown roles are dropped, as the Jinja template does; NULL content is "". */
    chat_message odd[2] = {{"narrator", "ignored", NULL}, {"user", NULL, NULL}};
    CHECK_OK(chat_render(odd, 2, NULL, &out, &err), &err);
    CHECK(!strcmp(out, "<|im_start|>user\n<|im_end|>\n"));
    free(out);
}

int main(void) {
    RUN(test_chat_template_matches_transformers_byte_for_byte);
    RUN(test_qwen35_chat_template_matches_transformers_byte_for_byte);
    RUN(test_llama3_chat_template_matches_transformers_byte_for_byte);
    RUN(test_gemma3_chat_template_matches_transformers_byte_for_byte);
    RUN(test_chat_defaults_and_errors);
    return nc_test_exit_code();
}
