/* A forced call among several tools (tool_choice "required", Qwen3's JSON
 * calls, Qwen3.5's XML ones and Llama 3's tagless JSON reply;
 * src/gen/out_constraint.c): random
 * walks over a real
 * vocabulary (models/demo/tokenizer.json) under the request's mask, each
 * choosing the best allowed token of random logits, must end in one call
 * that the server's own tool-call scanner finds, naming one of the tools,
 * with arguments valid against that tool's parameters (checked by a
 * validator written here). The hostile tester saw `search({})` and calls
 * cut off: the arguments were held only to "an object" once more than one
 * tool could be called (Qwen3.5: only the call's first bytes were). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/demo_vocab.h"
#include "../test.h"
#include "gen/out_constraint.h"
#include "gen/tool_scan.h"
#include "serve/serve_request.h"

static const char *body =
    "{\"messages\":[{\"role\":\"user\",\"content\":\"go\"}],\"tool_choice\":\"required\","
    "\"tools\":["
    "{\"type\":\"function\",\"function\":{\"name\":\"search\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"query\":{\"type\":\"string\",\"maxLength\":12}},"
    "\"required\":[\"query\"],\"additionalProperties\":false}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"search_web\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"maxLength\":12},\"n\":{\"type\":"
    "\"integer\"}},\"required\":[\"q\",\"n\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"tz\":{\"enum\":[\"UTC\",\"CET\"]}},\"required\":[\"tz\"]}}}"
    "]}";

/* Characters (code points) of a UTF-8 string. */
static size_t n_chars(const char *s) {
    size_t n = 0;
    for (; s && *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The arguments a call to `name` may have. */
static int args_valid(const char *name, const json_t *a) {
    if (!json_is_object(a)) return 0;
    const char *k;
    json_t *x;
    if (!strcmp(name, "search")) {
        json_object_foreach((json_t *)a, k, x) if (strcmp(k, "query")) return 0;
        const char *q = json_string_value(json_object_get(a, "query"));
        return q != NULL && n_chars(q) <= 12;
    }
    if (!strcmp(name, "search_web")) {
        json_object_foreach((json_t *)a, k, x) if (strcmp(k, "q") && strcmp(k, "n")) return 0;
        const char *q = json_string_value(json_object_get(a, "q"));
        return q && n_chars(q) <= 12 && json_is_integer(json_object_get(a, "n"));
    }
    if (!strcmp(name, "get_time")) {
        json_object_foreach((json_t *)a, k, x) if (strcmp(k, "tz")) return 0;
        const char *tz = json_string_value(json_object_get(a, "tz"));
        return tz && (!strcmp(tz, "UTC") || !strcmp(tz, "CET"));
    }
    return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void required_call_among_tools_validates(chat_family family) {
    tok_tokenizer *t;
    tm_vocab *v;
    int32_t eog;
    nc_error err;
    CHECK_OK(nc_test_demo_vocab(&t, &v, &eog, &err), &err);
    int n_vocab = tok_vocab_size(t);
    serve_request r;
    serve_parse_error pe;
    CHECK_OK(serve_request_parse(body, strlen(body), SERVE_EP_CHAT, &r, &pe, &err), &err);
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    char *out = malloc(65536);
    int n_ok = 0, seen[3] = {0};
    const char *names[3] = {"search", "search_web", "get_time"};
    enum { WALKS = 24 };
    for (int w = 0; w < WALKS; w++) {
        gen_out_constraint *c;
        const char *param;
        CHECK_OK(gen_out_constraint_new(&r.out, family, v, &c, &param, &err), &err);
        gen_constraint h = gen_out_constraint_hooks(c);
        size_t n = 0;
        int ended = 0;
        for (int step = 0; step < 600 && !ended; step++) {
            nc_test_walk_logits(t, n_vocab, eog, &rng, logits);
            h.mask(h.user, logits);
            int best = nc_test_walk_best(logits, n_vocab);
            if (best < 0) break;
            h.accept(h.user, best);
            ended = best == eog;
            if (!ended && nc_test_walk_append(t, best, out, &n, 65536) != 0) break;
        }
        gen_out_constraint_free(c);
        gen_tool_scan scan = {0, 0, family, (const char *const *)r.out.tools, r.out.n_tools};
        gen_tool_news news;
        json_t *calls = json_array();
        while (gen_tool_scan_next(&scan, out, n, 1, &news)) {
            json_array_extend(calls, news.calls);
            json_decref(news.calls);
        }
        json_decref(news.calls);
        json_t *f = json_object_get(json_array_get(calls, 0), "function");
        const char *name = json_string_value(json_object_get(f, "name"));
        json_error_t je;
        const char *args_text = json_string_value(json_object_get(f, "arguments"));
        json_t *args = json_loads(args_text ? args_text : "", 0, &je);
        int ok = ended && json_array_size(calls) == 1 && name && args_valid(name, args);
        for (int k = 0; k < 3 && name; k++)
            seen[k] += !strcmp(name, names[k]);
        if (!ok) printf("  walk %d (%s): %.*s\n", w, ended ? "ended" : "did not end", (int)n, out);
        n_ok += ok;
        json_decref(args);
        json_decref(calls);
    }
    printf("  %d of %d walks: one valid call (tools chosen: search %d, search_web %d, get_time "
           "%d)\n",
           n_ok, WALKS, seen[0], seen[1], seen[2]);
    CHECKF(n_ok == WALKS, "%d of %d walks gave a valid call", n_ok, WALKS);
    CHECKF((seen[0] > 0) + (seen[1] > 0) + (seen[2] > 0) >= 2,
           "the walks never chose between tools");
    free(logits);
    free(out);
    serve_request_free(&r);
    tm_vocab_free(v);
    tok_free(t);
}

static void test_required_call_among_tools_validates_json(void) {
    required_call_among_tools_validates(CHAT_QWEN3);
}

static void test_required_call_among_tools_validates_xml(void) {
    required_call_among_tools_validates(CHAT_QWEN35);
}

/* Llama 3's tagless form: the whole reply {"name": ..., "parameters": ...} */
static void test_required_call_among_tools_validates_llama3(void) {
    required_call_among_tools_validates(CHAT_LLAMA3);
}

int main(void) {
    RUN(test_required_call_among_tools_validates_json);
    RUN(test_required_call_among_tools_validates_xml);
    RUN(test_required_call_among_tools_validates_llama3);
    return nc_test_exit_code();
}
