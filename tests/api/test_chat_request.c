/* The public API's chat requests, logprobs and messages, with <nectar.h>
 * only: nc_chat_request reads tools / tool_choice / response_format as the
 * server does (a bad field names its JSON path); a forced call on the demo
 * model is a call the scanner gives back with the tool's name and
 * arguments that parse; the scanner holds back a tag cut in two and never
 * shows it; logprobs are log-probabilities (<= 0, sorted, the
 * alternatives' probabilities sum to at most 1, greedy picks the first);
 * and the errors a caller meets name the file or field at fault and no
 * internal function of the library (an encoder asked to generate, bad
 * options, a model id not in the cache). */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "nectar.h"

#define DEMO "models/demo"
#define ENC "tests/fixtures/modernbert/mb_base"

/* 1 when msg names a function of the library's internals: a word with an
 * underscore that starts with one of the internal prefixes
 * (docs/architecture.md's table; not "json_": json_object and json_schema
 * are OpenAI's words). Public nc_* calls may be named. */
static int names_internal(const char *msg) {
    static const char *const prefixes[] = {
        "gen_",  "tok_",     "engine_", "qwen3_", "qwen35_", "modernbert_", "cpu_", "st_",
        "hf_",   "jm_",      "js_",     "tm_",    "serve_",  "api_",        "mil_", "lower_",
        "chat_", "decoder_", "dec_",    "quant_", "ane_",    "llama_"};
    for (const char *p = msg; *p; p++) {
        if (p != msg && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) continue;
        for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
            if (!strncmp(p, prefixes[i], strlen(prefixes[i]))) return 1;
    }
    return 0;
}

static void test_bad_fields_name_their_path(void) {
    nc_model *m = NULL;
    nc_error err = {0};
    CHECK_OK(nc_model_open(DEMO, "cpu", NULL, &m, &err), &err);
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"a b\"}}]}",
         "'tools[0].function.name'"},
        {"{\"tools\": 3}", "'tools' must be an array"},
        {"{\"tool_choice\": \"required\"}", "'tool_choice' is 'required' but there are no tools"},
        {"{\"response_format\": {\"type\": \"xml\"}}", "'response_format.type'"},
        {"{\"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"schema\": "
         "{\"type\": \"string\", \"pattern\": \"a+\"}}}}",
         "pattern"},
        {"[1]", "must be a JSON object"},
        {"{", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        nc_chat_request *r = NULL;
        nc_status st = nc_chat_request_new(m, cases[i].json, &r, &err);
        nc_chat_request_free(r);
        CHECKF(st != NC_OK && strstr(err.msg, cases[i].want) && !names_internal(err.msg),
               "case %zu: %s", i, err.msg);
    }
    nc_model_free(m);
}

typedef struct collected {
    char text[4096];
    size_t len;
    nc_sequence *seq;
    int n_tokens, bad_logprob;
} collected;

static int collect(void *user, int32_t token, const char *text, size_t len) {
    collected *c = user;
    if (c->len + len < sizeof c->text) {
        memcpy(c->text + c->len, text, len);
        c->len += len;
    }
    if (token < 0) return 0;
    /* the token this call delivers has its logprobs already */
    nc_logprob chosen, top[4];
    int n = nc_sequence_logprob(c->seq, (size_t)c->n_tokens, &chosen, top, 4);
    c->n_tokens++;
    double sum = 0;
    for (int k = 0; k < n; k++) {
        sum += exp(top[k].logprob);
        if (top[k].logprob > 0 || (k && top[k].logprob > top[k - 1].logprob)) c->bad_logprob = 1;
    }
    if (n != 4 || chosen.token != token || chosen.logprob > 0 || sum > 1 + 1e-5) c->bad_logprob = 1;
    return 0;
}

static void test_forced_call_comes_back_as_a_call(void) {
    nc_model *m = NULL;
    nc_sequence *seq = NULL;
    nc_chat_request *r = NULL;
    nc_error err = {0};
    const char *req = "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"weather\", "
                      "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
                      "{\"enum\": [\"Paris\", \"Rome\"]}}, \"required\": [\"city\"]}}}], "
                      "\"tool_choice\": \"required\"}";
    CHECK_OK(nc_model_open(DEMO, "cpu", NULL, &m, &err), &err);
    CHECK_OK(nc_sequence_new(m, 0, &seq, &err), &err);
    CHECK_OK(nc_chat_request_new(m, req, &r, &err), &err);
    CHECK(nc_chat_request_is_constrained(r) && nc_chat_request_uses_tools(r));
    nc_chat_message msg = {"user", "Weather in Paris?", NULL};
    char *prompt = NULL;
    CHECK_OK(nc_chat_request_render(r, &msg, 1, NULL, NC_CHAT_ADD_GENERATION_PROMPT, &prompt, &err),
             &err);
    /* the tools are in the system prompt; thinking is off (constrained) */
    CHECK(strstr(prompt, "\"name\": \"weather\"") && strstr(prompt, "<think>\n\n</think>"));
    nc_sampling *s = nc_sampling_new();
    CHECK_OK(nc_sampling_set(s, "temperature", 0, &err), &err);
    CHECK_OK(nc_sequence_constrain(seq, r, &err), &err);
    CHECK_OK(nc_sequence_set_logprobs(seq, 4, &err), &err);
    collected c = {.seq = seq};
    nc_finish fin;
    CHECK_OK(nc_generate(seq, prompt, 100, s, collect, &c, &fin, &err), &err);
    CHECKF(!c.bad_logprob && c.n_tokens > 10, "%d tokens", c.n_tokens);
    char *content = NULL, *calls = NULL;
    CHECK_OK(nc_chat_request_scan(r, c.text, c.len, 1, &content, &calls, &err), &err);
    json_error_t je;
    json_t *a = json_loads(calls, 0, &je);
    json_t *f = json_object_get(json_array_get(a, 0), "function");
    json_t *args = json_loads(json_string_value(json_object_get(f, "arguments")), 0, &je);
    const char *city = json_string_value(json_object_get(args, "city"));
    CHECKF(fin == NC_FINISH_EOS && json_array_size(a) == 1 &&
               !strcmp(json_string_value(json_object_get(f, "name")), "weather") && city &&
               (!strcmp(city, "Paris") || !strcmp(city, "Rome")) && !strstr(content, "<tool_"),
           "finish %d, content '%s', calls %s", (int)fin, content, calls);
    json_decref(args);
    json_decref(a);
    nc_free(content);
    nc_free(calls);
    /* fed in two pieces cut inside the open tag: nothing of it is shown */
    nc_chat_request_restart(r);
    size_t cut = 4;
    CHECK_OK(nc_chat_request_scan(r, c.text, cut, 0, &content, &calls, &err), &err);
    CHECKF(!strcmp(content, "") && !strcmp(calls, "[]"), "'%s' %s", content, calls);
    nc_free(content);
    nc_free(calls);
    CHECK_OK(nc_chat_request_scan(r, c.text, c.len, 1, &content, &calls, &err), &err);
    CHECKF(!strstr(content, "<tool") && strstr(calls, "\"weather\""), "'%s' %s", content, calls);
    nc_free(content);
    nc_free(calls);
    /* a shorter text than was scanned is a caller's error */
    CHECK(nc_chat_request_scan(r, c.text, 2, 1, &content, &calls, &err) == NC_ERR_INVALID);
    nc_sampling_free(s);
    nc_free(prompt);
    nc_chat_request_free(r);
    nc_sequence_free(seq);
    nc_model_free(m);
}

static void test_messages_name_no_internal_function(void) {
    nc_model *enc = NULL, *m = NULL;
    nc_sequence *seq = NULL;
    nc_error err = {0};
    CHECK_OK(nc_model_open(ENC, "cpu", NULL, &enc, &err), &err);
    /* an encoder asked to generate: says what the model is, names the folder */
    CHECK(nc_sequence_new(enc, 0, &seq, &err) != NC_OK);
    CHECKF(strstr(err.msg, ENC " is an encoder") && !names_internal(err.msg) &&
               !strstr(err.msg, "nc_sequence_new"),
           "%s", err.msg);
    nc_sampling *s = nc_sampling_new();
    CHECK(nc_sampling_from_model(s, enc, &err) != NC_OK);
    CHECKF(strstr(err.msg, "is an encoder") && !names_internal(err.msg), "%s", err.msg);
    CHECK(nc_chat_request_new(enc, "{}", NULL, &err) != NC_OK && !names_internal(err.msg));
    nc_sampling_free(s);
    nc_model_free(enc);
    const char *bad_opts[] = {"threads=x", NULL};
    CHECK(nc_model_open(DEMO, "cpu", bad_opts, &m, &err) != NC_OK);
    CHECKF(strstr(err.msg, "threads") && !names_internal(err.msg), "%s", err.msg);
    const char *cache[] = {"hf_cache=/nonexistent-cache", NULL};
    CHECK(nc_model_open("nectar-test/not-cached", "cpu", cache, &m, &err) == NC_ERR_NOT_FOUND);
    CHECKF(strstr(err.msg, "hf download nectar-test/not-cached") && !names_internal(err.msg), "%s",
           err.msg);
    CHECK_OK(nc_model_open(DEMO, "cpu", NULL, &m, &err), &err);
    CHECK_OK(nc_sequence_new(m, 0, &seq, &err), &err);
    CHECK(nc_sequence_set_logprobs(seq, 21, &err) == NC_ERR_INVALID && !names_internal(err.msg));
    CHECK(nc_sequence_logprob(seq, 0, NULL, NULL, 0) == -1); /* off, and nothing generated */
    CHECK(nc_generate(seq, "", 4, NULL, NULL, NULL, NULL, &err) != NC_OK);
    CHECKF(!names_internal(err.msg), "%s", err.msg);
    nc_sequence_free(seq);
    nc_model_free(m);
}

int main(void) {
    RUN(test_bad_fields_name_their_path);
    RUN(test_forced_call_comes_back_as_a_call);
    RUN(test_messages_name_no_internal_function);
    return nc_test_exit_code();
}
