/* Fuzz target: JSON Schemas from requests (response_format, tool
 * parameters), compiled into the constrained-output graph
 * (src/gen/json_schema.c) and walked by the matcher (json_match.c).
 * Input: a schema, a NUL byte, then choice bytes. A schema the compiler
 * takes is walked: at each step the choice byte picks where to start
 * looking among the 256 bytes for one the matcher accepts (a state is
 * copied by value to try each), and a choice with the high bit set ends
 * the output where it may end. Whatever was generated must parse as JSON
 * (jansson); and a state that can neither continue nor end is a dead end,
 * which only nesting past the matcher's depth may cause. When the first
 * choice byte is odd and the schema fits Qwen3.5's XML call form
 * (js_xml_call_form), the root is walked in that form instead, and the
 * call it makes must come back from the tool-call scanner as one call
 * whose arguments are a JSON object. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen/json_match.h"
#include "gen/tool_scan.h"

#define MAX_OUT 2048

/* The parameters out[0..n) in XML form, as the call a Qwen3.5 model would
 * write: the scanner must find exactly one call with an object as its
 * arguments. */
static void check_xml_call(const char *schema, const char *out, size_t n) {
    static const char head[] = "<tool_call>\n<function=f>\n", tail[] = "\n</tool_call>";
    json_t *params = json_loads(schema, 0, NULL);
    json_t *tool = json_pack("{s:s,s:{s:s,s:O}}", "type", "function", "function", "name", "f",
                             "parameters", params);
    char *tool_text = tool ? json_dumps(tool, JSON_COMPACT) : NULL;
    char *text = malloc(sizeof head + n + sizeof tail);
    if (!tool_text || !text) abort();
    memcpy(text, head, sizeof head - 1);
    memcpy(text + sizeof head - 1, out, n);
    memcpy(text + sizeof head - 1 + n, tail, sizeof tail);
    size_t len = sizeof head - 1 + n + sizeof tail - 1;
    const char *tools[1] = {tool_text};
    gen_tool_scan scan = {0, 0, CHAT_QWEN35, tools, 1};
    gen_tool_news news;
    int n_calls = 0;
    while (gen_tool_scan_next(&scan, text, len, 1, &news)) {
        for (size_t i = 0; i < json_array_size(news.calls); i++) {
            json_t *f = json_object_get(json_array_get(news.calls, i), "function");
            json_t *args = json_loads(json_string_value(json_object_get(f, "arguments")), 0, NULL);
            if (!json_is_object(args)) abort();
            json_decref(args);
            n_calls++;
        }
        json_decref(news.calls);
    }
    json_decref(news.calls);
    if (n_calls != 1) abort(); /* the call the grammar allowed was not read back */
    free(text);
    free(tool_text);
    json_decref(tool);
    json_decref(params);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t schema_len = nul ? (size_t)(nul - data) : size;
    char *schema = malloc(schema_len + 1);
    if (!schema) return 0;
    memcpy(schema, data, schema_len);
    schema[schema_len] = '\0';
    const uint8_t *choice = nul ? nul + 1 : data + size;
    size_t n_choice = (size_t)(data + size - choice);
    js_graph g;
    nc_error err;
    if (js_compile(schema, "fuzz", &g, &err) != NC_OK) {
        free(schema);
        return 0;
    }
    int xml = n_choice > 0 && (choice[0] & 1) && js_xml_call_form(&g, schema) == 1;
    jm_grammar gr = {&g, "", "", 0, 0, xml};
    jm_state s, t;
    jm_start(&gr, &s);
    char out[MAX_OUT + 1];
    size_t n = 0;
    int ended = 0;
    for (size_t i = 0; n < MAX_OUT; i++) {
        unsigned c = i < n_choice ? choice[i] : 0x80; /* out of choices: end when possible */
        if ((c & 0x80) && jm_can_end(&gr, &s)) {
            ended = 1;
            break;
        }
        int took = 0;
        for (unsigned k = 0; k < 256 && !took; k++) {
            unsigned char b = (unsigned char)((c * 2 + k) & 0xff);
            jm_copy(&t, &s);
            if (jm_feed(&gr, &t, b)) {
                jm_copy(&s, &t);
                out[n++] = (char)b;
                took = 1;
            }
        }
        if (!took) {
            if (jm_can_end(&gr, &s)) {
                ended = 1;
                break;
            }
            if (s.n < JM_MAX_DEPTH - 1) abort(); /* a dead end below the depth limit */
            break;
        }
        if (i >= n_choice + 4 * MAX_OUT) break; /* a value that will not end on its own */
    }
    if (ended && xml) {
        check_xml_call(schema, out, n);
    } else if (ended) {
        json_error_t je;
        json_t *v = json_loadb(out, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!v) abort();
        json_decref(v);
    }
    js_free(&g);
    free(schema);
    return 0;
}
