/* The request-body parser (src/serve/serve_request.c) on its own: OpenAI's
 * defaults, every accepted field landing where it should, text parts
 * joined, legacy completions logprobs, and errors that name the field. */
#include <string.h>

#include "../test.h"
#include "serve/serve_request.h"

static nc_status parse(const char *body, serve_endpoint ep, serve_request *r, serve_parse_error *pe,
                       nc_error *err) {
    return serve_request_parse(body, strlen(body), ep, r, pe, err);
}

static void test_defaults_follow_openai(void) {
    serve_request r;
    serve_parse_error pe;
    nc_error err;
    CHECK_OK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", SERVE_EP_CHAT, &r,
                   &pe, &err),
             &err);
    /* nothing sent: the model folder's defaults apply (serve_sched) */
    CHECK(r.sampling_set == 0);
    CHECK(r.max_tokens == -1 && r.n_stop == 0 && !r.stream && !r.logprobs && !r.has_seed);
    CHECK(r.enable_thinking == 1 && r.model == NULL);
    CHECK(r.n_messages == 1 && !strcmp(r.messages[0].role, "user") &&
          !strcmp(r.messages[0].content, "hi"));
    serve_request_free(&r);
}

static void test_every_field_is_read(void) {
    const char *body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"sys\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
        "\"text\":\"b\"}]},"
        "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"r\"}],"
        "\"temperature\":0.5,\"top_p\":0.9,\"top_k\":7,\"min_p\":0.1,\"max_tokens\":3,"
        "\"max_completion_tokens\":9,\"stop\":[\"x\",\"yy\"],\"seed\":-1,\"presence_penalty\":1.5,"
        "\"frequency_penalty\":-1,\"logprobs\":true,\"top_logprobs\":4,\"stream\":true,"
        "\"stream_options\":{\"include_usage\":true},\"chat_template_kwargs\":{\"enable_thinking\":"
        "false},"
        "\"user\":\"ignored\"}";
    serve_request r;
    serve_parse_error pe;
    nc_error err;
    CHECK_OK(parse(body, SERVE_EP_CHAT, &r, &pe, &err), &err);
    CHECK(!strcmp(r.model, "m") && r.n_messages == 3);
    CHECK(!strcmp(r.messages[0].role, "system"));
    CHECK(!strcmp(r.messages[1].content, "ab"));
    CHECK(!strcmp(r.messages[2].content, "") && !strcmp(r.messages[2].reasoning_content, "r"));
    CHECK(serve_request_param(&r, "temperature") == 0.5 &&
          serve_request_param(&r, "top_p") == 0.9 && serve_request_param(&r, "top_k") == 7 &&
          serve_request_param(&r, "min_p") == 0.1);
    CHECK(r.max_tokens == 9); /* max_completion_tokens wins */
    CHECK(r.n_stop == 2 && !strcmp(r.stop[1], "yy"));
    CHECK(r.has_seed && r.seed == UINT64_MAX);
    CHECK(serve_request_param(&r, "presence_penalty") == 1.5 &&
          serve_request_param(&r, "frequency_penalty") == -1.0);
    CHECK(r.logprobs && r.top_logprobs == 4 && r.stream && r.include_usage && !r.enable_thinking);
    serve_request_free(&r);
}

static void test_completions_prompt_and_legacy_logprobs(void) {
    serve_request r;
    serve_parse_error pe;
    nc_error err;
    CHECK_OK(parse("{\"prompt\":[\"once\"],\"logprobs\":0,\"stop\":\"z\"}", SERVE_EP_COMPLETIONS,
                   &r, &pe, &err),
             &err);
    CHECK(!strcmp(r.prompt, "once") && r.logprobs == 1 && r.top_logprobs == 0);
    CHECK(r.n_stop == 1 && !strcmp(r.stop[0], "z"));
    serve_request_free(&r);
    CHECK_OK(parse("{\"prompt\":\"x\"}", SERVE_EP_COMPLETIONS, &r, &pe, &err), &err);
    CHECK(!r.logprobs);
    serve_request_free(&r);
    CHECK_OK(parse("{\"prompt\":[5,0,7]}", SERVE_EP_COMPLETIONS, &r, &pe, &err), &err);
    CHECK(r.prompt == NULL && r.n_prompt_ids == 3 && r.prompt_ids[0] == 5 && r.prompt_ids[2] == 7);
    serve_request_free(&r);
}

static void test_errors_name_the_field(void) {
    static const struct {
        serve_endpoint ep;
        const char *body, *param;
        nc_status st;
    } cases[] = {
        {SERVE_EP_CHAT, "{\"messages\":[", "", NC_ERR_FORMAT},
        {SERVE_EP_CHAT, "{\"messages\":[],\"messages\":[]}", "", NC_ERR_FORMAT},
        {SERVE_EP_CHAT, "{\"messages\":[{\"role\":\"user\"}]}", "messages[0].content",
         NC_ERR_INVALID},
        {SERVE_EP_CHAT,
         "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":"
         "{}}]}]}",
         "messages[0].tool_calls[0].function", NC_ERR_INVALID},
        {SERVE_EP_CHAT,
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"required\"}",
         "tool_choice", NC_ERR_INVALID},
        {SERVE_EP_CHAT,
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
         "\"function\",\"function\":{\"name\":\"a\"}}],\"tool_choice\":{\"type\":\"function\","
         "\"function\":{\"name\":\"b\"}}}",
         "tool_choice.function.name", NC_ERR_INVALID},
        {SERVE_EP_COMPLETIONS, "{\"prompt\":\"x\",\"tools\":[]}", "tools", NC_ERR_INVALID},
        {SERVE_EP_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}",
         "messages[0].content[0].text", NC_ERR_INVALID},
        {SERVE_EP_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_k\":1.5}",
         "top_k", NC_ERR_INVALID},
        {SERVE_EP_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":2}",
         "top_p", NC_ERR_INVALID},
        {SERVE_EP_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[\"\"]}",
         "stop[0]", NC_ERR_INVALID},
        {SERVE_EP_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"seed\":1e30}",
         "seed", NC_ERR_INVALID},
        {SERVE_EP_CHAT,
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":"
         "\"xml\"}}",
         "response_format.type", NC_ERR_INVALID},
        {SERVE_EP_CHAT,
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template_kwargs\":{\"enable_"
         "thinking\":1}}",
         "chat_template_kwargs.enable_thinking", NC_ERR_INVALID},
        {SERVE_EP_COMPLETIONS, "{\"prompt\":[\"a\",\"b\"]}", "prompt", NC_ERR_INVALID},
        {SERVE_EP_COMPLETIONS, "{}", "prompt", NC_ERR_INVALID},
        {SERVE_EP_COMPLETIONS, "{\"prompt\":[1,-2]}", "prompt[1]", NC_ERR_INVALID},
        {SERVE_EP_COMPLETIONS, "{\"prompt\":[1,\"a\"]}", "prompt[1]", NC_ERR_INVALID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        serve_request r;
        serve_parse_error pe;
        nc_error err = {0};
        nc_status st = parse(cases[i].body, cases[i].ep, &r, &pe, &err);
        CHECKF(st == cases[i].st, "case %zu: status %d (%s)", i, (int)st, err.msg);
        CHECKF(!strcmp(pe.param, cases[i].param), "case %zu: param '%s', expected '%s'", i,
               pe.param, cases[i].param);
        CHECKF(strchr(err.msg, '\n') == NULL && err.msg[0], "case %zu: message '%s'", i, err.msg);
        if (cases[i].param[0])
            CHECKF(strstr(err.msg, cases[i].param) != NULL,
                   "case %zu: message '%s' does not name '%s'", i, err.msg, cases[i].param);
    }
}

/* Seeds cover every 64-bit integer, signed or not; integers beyond that
 * are a 400 naming the field (jansson alone would refuse the document). */
static void test_seed_spans_uint64(void) {
    static const struct {
        const char *seed;
        uint64_t want;
    } ok[] = {{"18446744073709551615", UINT64_MAX},
              {"9223372036854775808", 9223372036854775808ull},
              {"9223372036854775807", 9223372036854775807ull},
              {"-1", UINT64_MAX},
              {"-9223372036854775808", 9223372036854775808ull},
              {"0", 0}};
    char body[256];
    serve_request r;
    serve_parse_error pe;
    nc_error err;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        snprintf(body, sizeof body, "{\"prompt\":\"x\",\"seed\":%s,\"stop\":\"9\"}", ok[i].seed);
        CHECK_OK(parse(body, SERVE_EP_COMPLETIONS, &r, &pe, &err), &err);
        int good = r.has_seed && r.seed == ok[i].want && !strcmp(r.stop[0], "9");
        serve_request_free(&r);
        CHECKF(good, "seed %s", ok[i].seed);
    }
    static const char *const bad[] = {"18446744073709551616", "-9223372036854775809", "1.5",
                                      "\"12\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(body, sizeof body, "{\"prompt\":\"x\",\"seed\":%s}", bad[i]);
        CHECKF(parse(body, SERVE_EP_COMPLETIONS, &r, &pe, &err) == NC_ERR_INVALID &&
                   !strcmp(pe.param, "seed"),
               "seed %s: param '%s' (%s)", bad[i], pe.param, err.msg);
    }
    CHECK(parse("{\"prompt\":\"x\",\"max_tokens\":99999999999999999999999}", SERVE_EP_COMPLETIONS,
                &r, &pe, &err) == NC_ERR_INVALID &&
          !strcmp(pe.param, "max_tokens"));
    /* Digits inside strings are left alone. */
    CHECK_OK(parse("{\"prompt\":\"99999999999999999999999\"}", SERVE_EP_COMPLETIONS, &r, &pe, &err),
             &err);
    int same = !strcmp(r.prompt, "99999999999999999999999");
    serve_request_free(&r);
    CHECK(same);
}

/* A body that is not an object is named as such, without a field in
 * quotes (it once read "'' request body must be ..."). */
static void test_non_object_body_message(void) {
    static const char *const bodies[] = {"[1,2]", "[]", "[{\"messages\":[]}]"};
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        serve_request r;
        serve_parse_error pe;
        nc_error err = {0};
        nc_status st = parse(bodies[i], SERVE_EP_CHAT, &r, &pe, &err);
        CHECKF(st == NC_ERR_INVALID && !strcmp(err.msg, "request body must be a JSON object") &&
                   !pe.param[0],
               "body %s: '%s'", bodies[i], err.msg);
    }
}

/* The bounds OpenAI documents, both sides of each: 4 stop strings are
 * allowed and 5 refused; a stop of 256 bytes is allowed and 257 refused. */
static void test_stop_limits_are_inclusive(void) {
    char body[1024];
    serve_request r;
    serve_parse_error pe;
    nc_error err;
    CHECK_OK(parse("{\"prompt\":\"x\",\"stop\":[\"a\",\"b\",\"c\",\"d\"]}", SERVE_EP_COMPLETIONS,
                   &r, &pe, &err),
             &err);
    CHECK(r.n_stop == 4 && !strcmp(r.stop[3], "d"));
    serve_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}",
                SERVE_EP_COMPLETIONS, &r, &pe, &err) == NC_ERR_INVALID &&
          !strcmp(pe.param, "stop"));
    for (int len = 256; len <= 257; len++) {
        int n = snprintf(body, sizeof body, "{\"prompt\":\"x\",\"stop\":\"");
        memset(body + n, 'z', (size_t)len);
        snprintf(body + n + len, sizeof body - (size_t)(n + len), "\"}");
        nc_status st = parse(body, SERVE_EP_COMPLETIONS, &r, &pe, &err);
        if (st == NC_OK) serve_request_free(&r);
        CHECKF((st == NC_OK) == (len == 256), "a stop of %d bytes: status %d", len, (int)st);
    }
}

int main(void) {
    RUN(test_non_object_body_message);
    RUN(test_stop_limits_are_inclusive);
    RUN(test_defaults_follow_openai);
    RUN(test_seed_spans_uint64);
    RUN(test_every_field_is_read);
    RUN(test_completions_prompt_and_legacy_logprobs);
    RUN(test_errors_name_the_field);
    return nc_test_exit_code();
}
