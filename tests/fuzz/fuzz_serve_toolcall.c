/* Fuzz target: the tool-call scanner (src/gen/tool_scan.c) on
 * arbitrary model output. Input: one byte (bit 0: Qwen3.5's XML format,
 * else bit 1: Llama 3's tagless JSON reply, else Qwen3's JSON), then the
 * output. Scanned whole and then fed one byte
 * at a time as a stream is, it must give the same text and the same calls;
 * with no call the text is the output unchanged (nothing lost); every
 * Qwen3.5 call's arguments are a JSON object (Qwen3 passes a string
 * "arguments" on as the model wrote it). Any failure aborts. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen/tool_scan.h"

static const char *const TOOLS[] = {
    "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"s\": {\"type\": \"string\"}, \"i\": {\"type\": \"integer\"}, "
    "\"n\": {\"type\": \"number\"}, \"b\": {\"type\": \"boolean\"}, \"o\": {\"type\": "
    "\"object\"}, \"a\": {\"type\": \"array\"}, \"z\": {\"type\": \"null\"}}}}}",
};

typedef struct scan_out {
    char *text;
    size_t len;
    json_t *calls; /* [name, arguments] pairs */
} scan_out;

static void take(gen_tool_scan *st, const char *out, size_t len, int is_final, scan_out *r) {
    int want_object = st->family == CHAT_QWEN35;
    gen_tool_news news;
    while (gen_tool_scan_next(st, out, len, is_final, &news)) {
        if (news.text_len) {
            char *p = realloc(r->text, r->len + news.text_len + 1);
            if (!p) abort();
            memcpy(p + r->len, news.text, news.text_len);
            r->text = p;
            r->len += news.text_len;
        }
        size_t i;
        json_t *c;
        json_array_foreach(news.calls, i, c) {
            json_t *f = json_object_get(c, "function");
            const char *args = json_string_value(json_object_get(f, "arguments"));
            json_error_t je;
            json_t *a = json_loads(args ? args : "", JSON_ALLOW_NUL, &je);
            if (want_object && !json_is_object(a)) abort();
            json_decref(a);
            json_array_append_new(r->calls, json_pack("[O,s]", json_object_get(f, "name"), args));
        }
        json_decref(news.calls);
    }
    json_decref(news.calls);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    chat_family f = data[0] & 1 ? CHAT_QWEN35 : data[0] & 2 ? CHAT_LLAMA3 : CHAT_QWEN3;
    gen_tool_scan proto = {0, 0, f, TOOLS, 1};
    const char *out = (const char *)data + 1;
    size_t n = size - 1;
    scan_out whole = {NULL, 0, json_array()}, bytewise = {NULL, 0, json_array()};
    gen_tool_scan st = proto;
    take(&st, out, n, 1, &whole);
    st = proto;
    for (size_t i = 1; i <= n; i++)
        take(&st, out, i, 0, &bytewise);
    take(&st, out, n, 1, &bytewise);
    if (whole.len != bytewise.len || (whole.len && memcmp(whole.text, bytewise.text, whole.len)))
        abort(); /* the stream showed other text */
    if (!json_equal(whole.calls, bytewise.calls)) abort();
    if (json_array_size(whole.calls) == 0 && (whole.len != n || (n && memcmp(whole.text, out, n))))
        abort(); /* output lost or changed */
    free(whole.text);
    free(bytewise.text);
    json_decref(whole.calls);
    json_decref(bytewise.calls);
    return 0;
}
