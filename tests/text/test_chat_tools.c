/* The tool parts of the Qwen3, Qwen3.5 and Llama 3 templates are
 * byte-identical to transformers' apply_chat_template(..., tools=...) over
 * the committed cases in tests/fixtures/chat/tool_cases.jsonl
 * (tools/make_chat_tool_fixtures.py), qwen35_tool_cases.jsonl
 * (tools/make_qwen35_fixtures.py) and llama3_tool_cases.jsonl
 * (tools/make_llama3_fixtures.py): definitions through chat_tojson
 * (Python's json.dumps: non-ASCII, escapes, float repr; Llama 3's with
 * indent=4), assistant tool calls with string or object arguments (Qwen3.5:
 * each member as an XML parameter; Llama 3: the object through tojson),
 * tool results grouped into one user turn (Qwen) or as ipython turns
 * (Llama 3), with and without thinking, preserve_thinking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "fixture_lines.h"
#include "text/chat.h"
#include "text/chat_tojson.h"

/* One case rendered; returns the text (malloc'ed) or NULL. Strings made
 * here are collected in owned[] for the caller to free. */
static char *render_row(chat_family f, const json_t *row, char **owned, size_t *n_owned) {
    const json_t *msgs = json_object_get(row, "messages"), *tools = json_object_get(row, "tools");
    size_t n = json_array_size(msgs), n_defs = json_array_size(tools);
    chat_message *m = calloc(n, sizeof *m);
    chat_tool_call **calls = calloc(n, sizeof *calls);
    size_t *n_calls = calloc(n, sizeof *n_calls);
    const char **defs = calloc(n_defs + 1, sizeof *defs);
    nc_error err;
    for (size_t i = 0; i < n_defs; i++) {
        char *t = NULL;
        if (chat_tojson(json_array_get(tools, i), &t, &err) == NC_OK) owned[(*n_owned)++] = t;
        defs[i] = t;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(msgs, i), *tc = json_object_get(o, "tool_calls");
        m[i].role = json_string_value(json_object_get(o, "role"));
        m[i].content = json_string_value(json_object_get(o, "content"));
        m[i].reasoning_content = json_string_value(json_object_get(o, "reasoning_content"));
        n_calls[i] = json_array_size(tc);
        calls[i] = calloc(n_calls[i] + 1, sizeof **calls);
        for (size_t k = 0; k < n_calls[i]; k++) {
            const json_t *f = json_object_get(json_array_get(tc, k), "function");
            const json_t *a = json_object_get(f, "arguments");
            calls[i][k].name = json_string_value(json_object_get(f, "name"));
            if (json_is_string(a)) {
                calls[i][k].arguments = json_string_value(a);
            } else {
                char *t = NULL;
                if (chat_tojson(a, &t, &err) == NC_OK) owned[(*n_owned)++] = t;
                calls[i][k].arguments = t;
            }
        }
    }
    chat_options opt = {json_is_true(json_object_get(row, "add_generation_prompt")),
                        json_is_true(json_object_get(row, "enable_thinking")),
                        json_is_true(json_object_get(row, "preserve_thinking"))};
    chat_tools t = {defs, n_defs, (const chat_tool_call *const *)calls, n_calls};
    char *got = NULL;
    if (chat_render_family(f, m, n, &opt, &t, &got, &err) != NC_OK) printf("  %s\n", err.msg);
    for (size_t i = 0; i < n; i++)
        free(calls[i]);
    free(calls);
    free(n_calls);
    free(defs);
    free(m);
    return got;
}

static void check_rows(const char *path, chat_family f) {
    fixture_rows rows;
    CHECK(fixture_rows_load(path, &rows) == 0);
    CHECK(rows.n >= 8);
    int ok = 1;
    for (size_t r = 0; r < rows.n; r++) {
        char *owned[64];
        size_t n_owned = 0;
        const char *name = fixture_str(rows.rows[r], "name", NULL);
        const char *want = fixture_str(rows.rows[r], "expected", NULL);
        char *got = render_row(f, rows.rows[r], owned, &n_owned);
        if (!got || strcmp(got, want) != 0) {
            size_t i = 0;
            while (got && got[i] && got[i] == want[i])
                i++;
            size_t from = i > 30 ? i - 30 : 0;
            printf("  %s: differs at byte %zu\n    got:  '%.60s'\n    want: '%.60s'\n", name, i,
                   got ? got + from : "(null)", want + from);
            ok = 0;
        }
        free(got);
        for (size_t i = 0; i < n_owned; i++)
            free(owned[i]);
    }
    fixture_rows_free(&rows);
    CHECK(ok);
}

static void test_tool_template_matches_transformers_byte_for_byte(void) {
    check_rows("tests/fixtures/chat/tool_cases.jsonl", CHAT_QWEN3);
}

static void test_qwen35_tool_template_matches_transformers_byte_for_byte(void) {
    check_rows("tests/fixtures/chat/qwen35_tool_cases.jsonl", CHAT_QWEN35);
}

static void test_llama3_tool_template_matches_transformers_byte_for_byte(void) {
    check_rows("tests/fixtures/chat/llama3_tool_cases.jsonl", CHAT_LLAMA3);
}

/* What Llama 3's template raises on, one line each naming the message:
 * two calls in one message, arguments that are no JSON, tools with no
 * message after the system one to carry them. */
static void test_llama3_tool_refusals(void) {
    chat_message m[2] = {{"user", "u", NULL}, {"assistant", "", NULL}};
    chat_tool_call two[2] = {{"f", "{}"}, {"g", "{}"}}, bad = {"f", "{oops"};
    const chat_tool_call *calls[2] = {NULL, two}, *bad_calls[2] = {NULL, &bad};
    size_t n_two[2] = {0, 2}, n_one[2] = {0, 1};
    chat_tools t = {NULL, 0, calls, n_two}, tb = {NULL, 0, bad_calls, n_one};
    char *out = NULL;
    nc_error err;
    CHECK(chat_render_family(CHAT_LLAMA3, m, 2, NULL, &t, &out, &err) == NC_ERR_INVALID);
    CHECK(out == NULL && strstr(err.msg, "message 1 has 2 tool calls"));
    CHECK(chat_render_family(CHAT_LLAMA3, m, 2, NULL, &tb, &out, &err) == NC_ERR_INVALID);
    CHECK(out == NULL && strstr(err.msg, "'f' in message 1 are not JSON"));
    const char *def = "{\"type\": \"function\", \"function\": {\"name\": \"f\"}}";
    chat_message sys = {"system", "s", NULL};
    chat_tools td = {&def, 1, NULL, NULL};
    CHECK(chat_render_family(CHAT_LLAMA3, &sys, 1, NULL, &td, &out, &err) == NC_ERR_INVALID);
    CHECK(out == NULL && strstr(err.msg, "first user message"));
}

/* Call arguments Qwen3.5 cannot write (not a JSON object): one line naming
 * the call and the message, as HF's `arguments|items` fails. */
static void test_qwen35_non_object_arguments_refused(void) {
    chat_message m[2] = {{"user", "u", NULL}, {"assistant", "", NULL}};
    chat_tool_call c = {"f", "[1, 2]"};
    const chat_tool_call *calls[2] = {NULL, &c};
    size_t n_calls[2] = {0, 1};
    chat_tools t = {NULL, 0, calls, n_calls};
    char *out = NULL;
    nc_error err;
    CHECK(chat_render_family(CHAT_QWEN35, m, 2, NULL, &t, &out, &err) == NC_ERR_INVALID);
    CHECK(out == NULL && strstr(err.msg, "'f'") && strstr(err.msg, "message 1"));
}

/* The template without tools (Gemma 3's) renders a conversation whose
 * calls array holds no call (what the server passes for every chat), and
 * refuses one with a call or tool definitions. */
static void test_templates_without_tools_take_an_empty_calls_array(void) {
    chat_message m[2] = {{"user", "Hi", NULL}, {"assistant", "Hello", NULL}};
    const chat_tool_call call = {"f", "{}"};
    const chat_tool_call *calls[2] = {NULL, &call};
    size_t none[2] = {0, 0}, one[2] = {0, 1};
    const char *def = "{\"name\": \"f\"}";
    char *out = NULL;
    nc_error err;
    chat_tools empty = {NULL, 0, calls, none}, with_call = {NULL, 0, calls, one};
    chat_tools with_def = {&def, 1, NULL, NULL};
    CHECK_OK(chat_render_family(CHAT_GEMMA3, m, 2, NULL, &empty, &out, &err), &err);
    CHECK(out && strstr(out, "Hello"));
    free(out);
    CHECK(chat_render_family(CHAT_GEMMA3, m, 2, NULL, &with_call, &out, &err) ==
          NC_ERR_UNSUPPORTED);
    CHECK(chat_render_family(CHAT_GEMMA3, m, 2, NULL, &with_def, &out, &err) == NC_ERR_UNSUPPORTED);
}

/* The family of a --chat-template name (an engine kind's is its family
 * row's: tests/engine/test_engine.c). */
static void test_family_by_kind_and_name(void) {
    CHECK(chat_family_by_name("qwen3") == CHAT_QWEN3);
    CHECK(chat_family_by_name("llama3") == CHAT_LLAMA3);
    CHECK(chat_family_by_name("gemma3") == CHAT_GEMMA3);
    CHECK(chat_family_by_name("qwen3.5") == CHAT_QWEN35);
    CHECK(chat_family_by_name("qwen35") == -1 && chat_family_by_name("") == -1);
}

int main(void) {
    RUN(test_tool_template_matches_transformers_byte_for_byte);
    RUN(test_qwen35_tool_template_matches_transformers_byte_for_byte);
    RUN(test_qwen35_non_object_arguments_refused);
    RUN(test_llama3_tool_template_matches_transformers_byte_for_byte);
    RUN(test_llama3_tool_refusals);
    RUN(test_templates_without_tools_take_an_empty_calls_array);
    RUN(test_family_by_kind_and_name);
    return nc_test_exit_code();
}
