/* `nectar serve` on the qwen35-cpu engine (tests/fixtures/qwen35/tiny_vl_tied,
 * tools/make_qwen35_fixtures.py): raw-text completions equal HF's greedy
 * text for prompts of 4, 33 and 202 tokens, two slots at once; a chat
 * request renders Qwen3.5's template (prompt_tokens as HF's, the reply in
 * reasoning_content with thinking on) and a second request sharing its
 * prompt reuses the cached prefix through the recurrent state's snapshot;
 * a request with tools and a call in its history renders Qwen3.5's tool
 * template (the engine kind picks it) to HF's token count, which the tiny
 * model's 512-token context refuses, naming the count. */
#include "../test.h"
#include "serve_client.h"

#define M "tests/fixtures/qwen35/tiny_vl_tied"

static char *body_of(const char *prompt, int max_tokens) {
    json_t *b = json_pack("{s:s, s:i, s:f}", "prompt", prompt, "max_tokens", max_tokens,
                          "temperature", 0.0);
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

static void test_completions_and_chat_match_hf(void) {
    if (!have_curl()) SKIP("curl not installed");
    srv s;
    const char *args[] = {"-m", M, "--parallel", "2", "--ctx", "512", "-t", "1", NULL};
    CHECKF(srv_start(&s, args) == 0, "server did not start");
    int ok = 1;
    char why[512] = "";
    for (int k = 0; ok && k < 3; k++) {
        char path[256];
        size_t n;
        snprintf(path, sizeof path, M "/run_%d.prompt", k);
        char *prompt = slurp(path, &n);
        snprintf(path, sizeof path, M "/run_%d.expected", k);
        char *want = slurp(path, &n);
        char *body = prompt ? body_of(prompt, 32) : NULL;
        reply r = body ? http(&s, "POST", "/v1/completions", body, NULL) : (reply){0};
        json_t *o = parse_json(r.body);
        const char *got = jstr(o, "choices.0.text");
        if (!want || !got || strcmp(got, want)) {
            snprintf(why, sizeof why, "prompt %d: got '%s' want '%s'", k, got ? got : "(none)",
                     want ? want : "(none)");
            ok = 0;
        }
        json_decref(o);
        reply_free(&r);
        free(body);
        free(prompt);
        free(want);
    }
    /* chat: HF's prompt token counts (chat_prompt_tokens.txt: thinking on,
     * off); the second request reuses the first's 32-token prompt */
    size_t n;
    char *counts = slurp(M "/chat_prompt_tokens.txt", &n);
    int n_think = 0, n_nothink = 0;
    if (counts) sscanf(counts, "%d %d", &n_think, &n_nothink);
    free(counts);
    const char *chat_on =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"Who made the heaven?\"}],"
        "\"max_tokens\":4,\"temperature\":0}";
    const char *chat_off =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"Who made the heaven?\"}],"
        "\"max_tokens\":4,\"temperature\":0,"
        "\"chat_template_kwargs\":{\"enable_thinking\":false}}";
    reply r1 = http(&s, "POST", "/v1/chat/completions", chat_on, NULL);
    reply r2 = http(&s, "POST", "/v1/chat/completions", chat_off, NULL);
    json_t *o1 = parse_json(r1.body), *o2 = parse_json(r2.body);
    long long p1 = jint(o1, "usage.prompt_tokens"), p2 = jint(o2, "usage.prompt_tokens");
    long long cached = jint(o2, "usage.prompt_tokens_details.cached_tokens");
    const char *reasoning = jstr(o1, "choices.0.message.reasoning_content");
    printf("  chat: prompt %lld / %lld tokens (HF %d / %d), second reused %lld\n", p1, p2, n_think,
           n_nothink, cached);
    int chat_ok = n_think > 0 && p1 == n_think && p2 == n_nothink && reasoning && *reasoning &&
                  cached == n_think;
    json_decref(o1);
    json_decref(o2);
    reply_free(&r1);
    reply_free(&r2);
    /* tools: tool_chat.json holds the request and HF's prompt token count */
    char *tool = slurp(M "/tool_chat.json", &n);
    json_error_t je;
    json_t *tj = tool ? json_loads(tool, 0, &je) : NULL;
    char *tool_body = json_dumps(json_object_get(tj, "body"), JSON_COMPACT);
    long long tool_want = json_integer_value(json_object_get(tj, "prompt_tokens"));
    reply r3 = tool_body ? http(&s, "POST", "/v1/chat/completions", tool_body, NULL) : (reply){0};
    json_t *o3 = parse_json(r3.body);
    const char *msg = jstr(o3, "error.message");
    long long tool_got = -1;
    if (msg) sscanf(msg, "the prompt has %lld tokens", &tool_got);
    printf("  tools: prompt %lld tokens (HF %lld): %s\n", tool_got, tool_want, msg ? msg : "");
    int tool_ok = tool_want > 0 && tool_got == tool_want;
    json_decref(o3);
    reply_free(&r3);
    free(tool_body);
    json_decref(tj);
    free(tool);
    int rc = srv_stop(&s);
    CHECKF(ok, "%s", why);
    CHECK(chat_ok);
    CHECK(tool_ok);
    CHECKF(rc == 0, "server exit status %d (see %s)", rc, s.log_path);
}

int main(void) {
    RUN(test_completions_and_chat_match_hf);
    return nc_test_exit_code();
}
