/* The tool-call scanner (src/gen/tool_scan.c): fed the whole output
 * at once or one byte at a time, it yields the same text and calls; text
 * that could start a tag is held back until it cannot; malformed or
 * unfinished calls come back as text, so nothing is lost. For the three
 * formats: Qwen3's JSON, Qwen3.5's XML, whose values are typed by the schema
 * (expected arguments written by hand as Python's json.dumps would), and
 * Llama 3's tagless JSON reply. */
#include <string.h>

#include "../test.h"
#include "gen/tool_scan.h"

typedef struct result {
    char text[1024];
    char calls[1024]; /* "name(arguments);" per call */
    int n_calls;
    int held_back; /* some prefix was not passed on before the end */
} result;

static void collect(gen_tool_scan *st, const char *out, size_t len, int is_final, result *r) {
    gen_tool_news news;
    while (gen_tool_scan_next(st, out, len, is_final, &news)) {
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

static void scan_whole(const gen_tool_scan *proto, const char *out, result *r) {
    memset(r, 0, sizeof *r);
    gen_tool_scan st = *proto;
    collect(&st, out, strlen(out), 1, r);
}

static void scan_bytewise(const gen_tool_scan *proto, const char *out, result *r) {
    memset(r, 0, sizeof *r);
    gen_tool_scan st = *proto;
    size_t n = strlen(out);
    for (size_t i = 1; i <= n; i++) {
        collect(&st, out, i, 0, r);
        if (st.pos < i && i < n) r->held_back = 1;
    }
    collect(&st, out, n, 1, r);
}

typedef struct scan_case {
    const char *out, *text, *calls;
    int n_calls;
} scan_case;

static void check_cases(const gen_tool_scan *proto, const scan_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        result w, b;
        scan_whole(proto, cases[i].out, &w);
        scan_bytewise(proto, cases[i].out, &b);
        CHECKF(!strcmp(w.text, cases[i].text) && !strcmp(w.calls, cases[i].calls) &&
                   w.n_calls == cases[i].n_calls,
               "case %zu whole: text '%s' calls '%s' (%d)", i, w.text, w.calls, w.n_calls);
        CHECKF(!strcmp(b.text, w.text) && !strcmp(b.calls, w.calls) && b.n_calls == w.n_calls,
               "case %zu bytewise: text '%s' calls '%s'", i, b.text, b.calls);
    }
}

static void test_calls_and_text_come_apart(void) {
    static const scan_case cases[] = {
        {"Just text.", "Just text.", "", 0},
        {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
         "\"Paris\"}}\n</tool_call>",
         "", "get_weather({\"city\":\"Paris\"});", 1},
        {"Let me look.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
         "<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>",
         "Let me look.\n\n", "a({});b({\"x\": 1});", 2},
        {"<tool_call>not json</tool_call> after", "<tool_call>not json</tool_call> after", "", 0},
        /* an arguments string that is not a JSON object's text: no call */
        {"<tool_call>{\"name\": \"c\", \"arguments\": \"x=1\"}</tool_call>",
         "<tool_call>{\"name\": \"c\", \"arguments\": \"x=1\"}</tool_call>", "", 0},
        {"<tool_call>{\"name\": \"c\", \"arguments\": \"[1]\"}</tool_call>",
         "<tool_call>{\"name\": \"c\", \"arguments\": \"[1]\"}</tool_call>", "", 0},
        {"<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>",
         "", 0},
        {"cut <tool_call>{\"name\": \"a\"", "cut <tool_call>{\"name\": \"a\"", "", 0},
        {"ends with <tool_", "ends with <tool_", "", 0},
        {"a < b <tool_call>{\"name\":\"x\"}</tool_call>", "a < b ", "x({});", 1},
    };
    gen_tool_scan qwen3 = {0};
    check_cases(&qwen3, cases, sizeof cases / sizeof *cases);
}

/* Qwen3.5: the tools' schemas type the values. */
static const char *const TOOLS35[] = {
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": "
    "{\"type\": \"integer\"}, \"metric\": {\"type\": \"boolean\"}, \"opts\": {\"type\": "
    "\"object\"}, \"tags\": {\"type\": \"array\"}, \"ratio\": {\"type\": \"number\"}, "
    "\"none\": {\"type\": \"null\"}}}}}",
    "{\"type\": \"function\", \"function\": {\"name\": \"search\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"q\": {\"type\": \"string\"}}}}}",
};

#define CALL35(name, params) "<tool_call>\n<function=" name ">\n" params "</function>\n</tool_call>"
#define PARAM35(key, value) "<parameter=" key ">\n" value "\n</parameter>\n"

static void test_qwen35_calls_typed_by_schema(void) {
    static const scan_case cases[] = {
        {"Just text.", "Just text.", "", 0},
        {CALL35("get_weather",
                PARAM35("city", "São Paulo") PARAM35("days", "3") PARAM35("metric", "true")
                    PARAM35("opts", "{\"a\":[1,2.5,\"é\"]}") PARAM35("tags", "[\"x\", null]")
                        PARAM35("ratio", "0.1") PARAM35("none", "null")),
         "",
         "get_weather({\"city\": \"São Paulo\", \"days\": 3, \"metric\": true, \"opts\": "
         "{\"a\": [1, 2.5, \"é\"]}, \"tags\": [\"x\", null], \"ratio\": 0.1, \"none\": "
         "null});",
         1},
        /* strings stay strings, whatever they look like; a value that does
         * not fit its type stays a string; Python's True (the first
         * template's str) is a boolean; unknown parameters are strings */
        {CALL35("get_weather",
                PARAM35("city", "42") PARAM35("days", "three") PARAM35("metric", "True")
                    PARAM35("opts", "[1]") PARAM35("extra", "7") PARAM35("ratio", "1e400x")),
         "",
         "get_weather({\"city\": \"42\", \"days\": \"three\", \"metric\": true, \"opts\": "
         "\"[1]\", \"extra\": \"7\", \"ratio\": \"1e400x\"});",
         1},
        /* a multi-line value keeps its inner newlines, loses the template's */
        {CALL35("search", PARAM35("q", "line one\n\nline \"two\"\n")), "",
         "search({\"q\": \"line one\\n\\nline \\\"two\\\"\\n\"});", 1},
        /* text before, two calls, no parameters, an unknown function */
        {"Checking.\n\n" CALL35("search", "") "\n" CALL35("lookup", PARAM35("n", "5")),
         "Checking.\n\n\n", "search({});lookup({\"n\": \"5\"});", 2},
        /* without the template's newlines */
        {"<tool_call><function=search><parameter=q>x</parameter></function></tool_call>", "",
         "search({\"q\": \"x\"});", 1},
        /* malformed: passed on as text */
        {"<tool_call>\n<function=search>\n" PARAM35("q", "x") "</tool_call>",
         "<tool_call>\n<function=search>\n" PARAM35("q", "x") "</tool_call>", "", 0},
        {"<tool_call>\n<function=search>\n<parameter=q>\nx\n</function>\n</tool_call>",
         "<tool_call>\n<function=search>\n<parameter=q>\nx\n</function>\n</tool_call>", "", 0},
        {CALL35("search", PARAM35("q", "a") PARAM35("q", "b")),
         CALL35("search", PARAM35("q", "a") PARAM35("q", "b")), "", 0},
        {"<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>",
         "<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", "", 0},
        {"<tool_call>\n<function=>\n</function>\n</tool_call>",
         "<tool_call>\n<function=>\n</function>\n</tool_call>", "", 0},
        {"<tool_call>\n<function=search>\n</function>\njunk</tool_call>",
         "<tool_call>\n<function=search>\n</function>\njunk</tool_call>", "", 0},
        /* unfinished: the model stopped inside the call */
        {"cut <tool_call>\n<function=search>\n<parameter=q>\nx",
         "cut <tool_call>\n<function=search>\n<parameter=q>\nx", "", 0},
    };
    gen_tool_scan qwen35 = {0, 0, CHAT_QWEN35, TOOLS35, 2};
    check_cases(&qwen35, cases, sizeof cases / sizeof *cases);
}

/* A key (or name) of any length is read back whole: the constraint makes
 * the model write a schema's key however long it is (fuzz_json_schema
 * found a 298-byte key the scanner, capped at 256, turned into no call). */
static void test_qwen35_long_key_read_whole(void) {
    char key[601], out[1024], want[1024];
    for (int i = 0; i < 600; i++)
        key[i] = (char)('a' + i % 26);
    key[600] = '\0';
    snprintf(out, sizeof out, "<tool_call>\n<function=search>\n<parameter=%s>\nfast\n</parameter>\n</function>\n</tool_call>", key);
    snprintf(want, sizeof want, "search({\"%s\": \"fast\"});", key);
    gen_tool_scan qwen35 = {0, 0, CHAT_QWEN35, TOOLS35, 2};
    result w, b;
    scan_whole(&qwen35, out, &w);
    scan_bytewise(&qwen35, out, &b);
    CHECKF(w.n_calls == 1 && !strcmp(w.calls, want) && !w.text[0], "calls '%.40s...' (%d)",
           w.calls, w.n_calls);
    CHECK(b.n_calls == 1 && !strcmp(b.calls, want));
}

/* Llama 3: the whole reply is the call ("parameters", or "arguments" as
 * models also write), after blanks and <|python_tag|>; anything else is
 * text, a reply that starts as one held back until the end. */
static void test_llama3_whole_reply_call(void) {
    static const scan_case cases[] = {
        {"Just text.", "Just text.", "", 0},
        {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "",
         "get_weather({\"city\":\"Paris\"});", 1},
        {"\n <|python_tag|>{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n", "", "a({\"x\":1});", 1},
        {"{\"name\": \"a\", \"parameters\": \"{\\\"x\\\": 1}\"}", "", "a({\"x\": 1});", 1},
        {"{\"name\": \"a\"}", "", "a({});", 1},
        /* JSON that is no call, a call not alone, not first, cut short */
        {"{\"answer\": 42}", "{\"answer\": 42}", "", 0},
        {"{\"name\": \"a\", \"parameters\": [1]}", "{\"name\": \"a\", \"parameters\": [1]}", "", 0},
        {"{\"name\": \"a\", \"parameters\": {}} and more",
         "{\"name\": \"a\", \"parameters\": {}} and more", "", 0},
        {"{\"name\": \"a\"}; {\"name\": \"b\"}", "{\"name\": \"a\"}; {\"name\": \"b\"}", "", 0},
        {"Sure: {\"name\": \"a\", \"parameters\": {}}",
         "Sure: {\"name\": \"a\", \"parameters\": {}}", "", 0},
        {"{\"name\": \"a\", \"parameters\": {", "{\"name\": \"a\", \"parameters\": {", "", 0},
        {"<|python_tag|>search.call(query=\"x\")", "<|python_tag|>search.call(query=\"x\")", "", 0},
        {" \n", " \n", "", 0},
        {"<|pyth", "<|pyth", "", 0},
    };
    gen_tool_scan llama3 = {0, 0, CHAT_LLAMA3, NULL, 0};
    check_cases(&llama3, cases, sizeof cases / sizeof *cases);
}

/* Llama 3 streams a reply that cannot be a call at once, and holds back
 * one that may be. */
static void test_llama3_text_is_not_held(void) {
    gen_tool_scan st = {0, 0, CHAT_LLAMA3, NULL, 0};
    gen_tool_news news;
    CHECK(!gen_tool_scan_next(&st, " {\"na", 5, 0, &news));
    json_decref(news.calls);
    CHECK(st.pos == 0);
    gen_tool_scan st2 = {0, 0, CHAT_LLAMA3, NULL, 0};
    CHECK(gen_tool_scan_next(&st2, " Hi", 3, 0, &news));
    CHECK(news.text_len == 3 && !strncmp(news.text, " Hi", 3));
    json_decref(news.calls);
    CHECK(gen_tool_scan_next(&st2, " Hi {\"name", 10, 0, &news) && news.text_len == 7);
    json_decref(news.calls);
}

/* Streaming never shows a tag: before the end, "<tool_" is held back. */
static void test_partial_tag_is_held_back(void) {
    gen_tool_scan st = {0};
    gen_tool_news news;
    const char *out = "Hi <tool_";
    CHECK(gen_tool_scan_next(&st, out, strlen(out), 0, &news));
    CHECK(news.text_len == 3 && !strncmp(news.text, "Hi ", 3));
    json_decref(news.calls);
    CHECK(!gen_tool_scan_next(&st, out, strlen(out), 0, &news));
    json_decref(news.calls);
    CHECK(st.pos == 3);
}

int main(void) {
    RUN(test_calls_and_text_come_apart);
    RUN(test_partial_tag_is_held_back);
    RUN(test_qwen35_calls_typed_by_schema);
    RUN(test_qwen35_long_key_read_whole);
    RUN(test_llama3_whole_reply_call);
    RUN(test_llama3_text_is_not_held);
    return nc_test_exit_code();
}
