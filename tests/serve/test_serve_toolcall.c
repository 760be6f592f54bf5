/* The tool-call scanner (src/serve/serve_toolcall.c): fed the whole output
 * at once or one byte at a time, it yields the same text and calls; text
 * that could start a tag is held back until it cannot; malformed or
 * unfinished calls come back as text, so nothing is lost. */
#include <string.h>

#include "../test.h"
#include "serve/serve_toolcall.h"

typedef struct result {
    char text[1024];
    char calls[1024]; /* "name(arguments);" per call */
    int n_calls;
    int held_back; /* some prefix was not passed on before the end */
} result;

static void collect(serve_tool_scan *st, const char *out, size_t len, int is_final, result *r) {
    serve_tool_news news;
    while (serve_tool_scan_next(st, out, len, is_final, &news)) {
        strncat(r->text, news.text ? news.text : "", news.text_len);
        json_t *c;
        size_t i;
        json_array_foreach(news.calls, i, c) {
            const char *id = json_string_value(json_object_get(c, "id"));
            json_t *f = json_object_get(c, "function");
            size_t n = strlen(r->calls);
            snprintf(r->calls + n, sizeof r->calls - n, "%s(%s);",
                     json_string_value(json_object_get(f, "name")),
                     json_string_value(json_object_get(f, "arguments")));
            if (!id || strncmp(id, "call-", 5) != 0) r->n_calls = -1000;
            r->n_calls++;
        }
        json_decref(news.calls);
    }
    json_decref(news.calls);
}

static void scan_whole(const char *out, result *r) {
    memset(r, 0, sizeof *r);
    serve_tool_scan st = {0};
    collect(&st, out, strlen(out), 1, r);
}

static void scan_bytewise(const char *out, result *r) {
    memset(r, 0, sizeof *r);
    serve_tool_scan st = {0};
    size_t n = strlen(out);
    for (size_t i = 1; i <= n; i++) {
        collect(&st, out, i, 0, r);
        if (st.pos < i && i < n) r->held_back = 1;
    }
    collect(&st, out, n, 1, r);
}

static void test_calls_and_text_come_apart(void) {
    static const struct {
        const char *out, *text, *calls;
        int n_calls;
    } cases[] = {
        {"Just text.", "Just text.", "", 0},
        {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
         "\"Paris\"}}\n</tool_call>",
         "", "get_weather({\"city\":\"Paris\"});", 1},
        {"Let me look.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
         "<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>",
         "Let me look.\n\n", "a({});b({\"x\": 1});", 2},
        {"<tool_call>not json</tool_call> after", "<tool_call>not json</tool_call> after", "", 0},
        {"<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>",
         "", 0},
        {"cut <tool_call>{\"name\": \"a\"", "cut <tool_call>{\"name\": \"a\"", "", 0},
        {"ends with <tool_", "ends with <tool_", "", 0},
        {"a < b <tool_call>{\"name\":\"x\"}</tool_call>", "a < b ", "x({});", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        result w, b;
        scan_whole(cases[i].out, &w);
        scan_bytewise(cases[i].out, &b);
        CHECKF(!strcmp(w.text, cases[i].text) && !strcmp(w.calls, cases[i].calls) &&
                   w.n_calls == cases[i].n_calls,
               "case %zu whole: text '%s' calls '%s' (%d)", i, w.text, w.calls, w.n_calls);
        CHECKF(!strcmp(b.text, w.text) && !strcmp(b.calls, w.calls) && b.n_calls == w.n_calls,
               "case %zu bytewise: text '%s' calls '%s'", i, b.text, b.calls);
    }
}

/* Streaming never shows a tag: before the end, "<tool_" is held back. */
static void test_partial_tag_is_held_back(void) {
    serve_tool_scan st = {0};
    serve_tool_news news;
    const char *out = "Hi <tool_";
    CHECK(serve_tool_scan_next(&st, out, strlen(out), 0, &news));
    CHECK(news.text_len == 3 && !strncmp(news.text, "Hi ", 3));
    json_decref(news.calls);
    CHECK(!serve_tool_scan_next(&st, out, strlen(out), 0, &news));
    json_decref(news.calls);
    CHECK(st.pos == 3);
}

int main(void) {
    RUN(test_calls_and_text_come_apart);
    RUN(test_partial_tag_is_held_back);
    return nc_test_exit_code();
}
