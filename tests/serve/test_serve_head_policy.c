/* The gate's request-head checks (serve_head.c) and the access rules
 * (serve_policy.c) as pure functions: each RFC 9112 case the gate must
 * answer itself, incomplete heads, the Host/Origin guard against DNS
 * rebinding, CORS header reflection, model-name matching and ids. */
#include <string.h>

#include "../test.h"
#include "serve/serve_head.h"
#include "serve/serve_policy.h"

static const serve_head_limits lim = {64, 256, 1000};

static int judge(const char *head, int is_eof) {
    serve_head_verdict v;
    serve_head_check(head, strlen(head), is_eof, &lim, &v);
    return v.status;
}

static void test_heads_get_the_rfc_status(void) {
    static const struct {
        const char *head;
        int status;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 200},
        {"GET / HTTP/1.0\r\n\r\n", 200},
        {"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 200},
        {"POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n", 200},
        {"POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length:  7 \r\n\r\n", 200},
        {"GET / HTTP/1.1\r\nHost: a\r\n", 0},
        {"GET / HTT", 0},
        {"GET / HTTP/1.1\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
        {"GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505},
        {"GET / HTTQ/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\nX: a\001b\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n", 413},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 411},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
         400},
        {"GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n",
         414},
        {"GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 414},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int st = judge(cases[i].head, 0);
        CHECKF(st == cases[i].status, "case %zu: %d, want %d", i, st, cases[i].status);
    }
    /* Over the head limit without the blank line: 431; a complete head just
     * under it is fine. */
    char big[400];
    snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: a\r\nX: %0240d\r\n", 0);
    CHECK(judge(big, 0) == 431);
    /* An incomplete head at the client's end of file is final. */
    CHECK(judge("GET / HTTP/1.1\r\nHost: a\r\n", 1) == 400);
    CHECK(judge("GET /", 1) == 400);
    serve_head_verdict v;
    const char *h = "GET / HTTP/1.1\r\nHost: a\r\n\r\n{body}";
    serve_head_check(h, strlen(h), 0, &lim, &v);
    CHECK(v.status == 200 && v.head_len == strlen(h) - 6);
}

/* Heads that can no longer become valid are refused as soon as they are
 * seen (they used to wait out the header deadline); one empty line before
 * the request line is skipped (RFC 9112 2.2); a second Authorization and a
 * percent-encoded NUL in the target are refused. */
static void test_hostile_heads_are_judged_at_once(void) {
    serve_head_verdict v0;
    static const struct {
        const char *head;
        int status;
    } cases[] = {
        {"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 200},
        {"\r", 0},
        {"\r\n", 0},
        {"\r\n\r", 400}, /* a second empty line is not skipped */
        {"\r\nGET / HT", 0},
        {"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET / HTTP/1.1\nHost: a\n\n", 400},
        {"GET / HTTP/1.1\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\n", 400},
        {"GET / HTTP/1.1\rHost: a", 400},
        {"hello there, server", 400},
        {"GET\t/", 400},
        {"GET /x y", 400},
        {"GET / HTTQ", 400},
        {"GET / HTTP/1.1x", 400},
        {"GET abc", 400},
        {"POST +", 400},
        {"POST + H", 400},
        {"GET ** HTTP", 400},
        {"GET", 0},
        {"ABCDEFGHIJKLMNOPQRST", 0},  /* a method of 20 characters may still come */
        {"ABCDEFGHIJKLMNOPQRSTU", 400}, /* 21 cannot */
        {"ABCDEFGHIJKLMNOPQRST / HTTP/1.0\r\n\r\n", 200},
        {"ABCDEFGHIJKLMNOPQRSTU / HTTP/1.0\r\n\r\n", 400},
        {"GET ", 0},
        {"GET / HTTP/1.", 0},
        {"GET / HTTP/1.1\r", 0},
        {"GET / HTTP/1.1\r\nHost: a\r\nX-Y", 0},
        {"GET / HTTP/1.1\r\nHost: a\r\nX-Y: 1\r", 0},
        {"GET / HTTP/1.1\r\nHost: a\r\n\r", 0},
        {"GET / HTTP/1.1\r\nHost: a\r\njunk line", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\nX: a\001", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\n"
         "authorization: Bearer j\r\n\r\n",
         400},
        {"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\n\r\n", 200},
        {"GET /v1/models/demo%00x HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET /%00/v1/models HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET /a%2500 HTTP/1.1\r\nHost: a\r\n\r\n", 200},
        {"GET /x%00 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET /%0 HTTP/1.1\r\nHost: a\r\n\r\n", 200},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n{\n\"a\":\r1}", 200},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int st = judge(cases[i].head, 0);
        CHECKF(st == cases[i].status, "case %zu: %d, want %d", i, st, cases[i].status);
    }
    /* an LF-only head is named as such, not as whatever breaks first */
    serve_head_check("GET / HTTP/1.1\nHost: a\n\n", 24, 0, &lim, &v0);
    CHECKF(v0.status == 400 && strstr(v0.msg, "CRLF"), "LF-only head: %d '%s'", v0.status, v0.msg);
    /* a lone CR or CRLF at the client's end of file is final too */
    CHECK(judge("\r", 1) == 400 && judge("\r\n", 1) == 400);
    serve_head_verdict v;
    const char *h = "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n{}";
    serve_head_check(h, strlen(h), 0, &lim, &v);
    CHECK(v.status == 200 && v.skip == 2 && v.head_len == strlen(h) - 2);
    h = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    serve_head_check(h, strlen(h), 0, &lim, &v);
    CHECK(v.status == 200 && v.skip == 0);
}

static void test_keyless_server_answers_only_loopback_names(void) {
    CHECK(serve_host_is_allowed("127.0.0.1", 0, "localhost:8080"));
    CHECK(serve_host_is_allowed("127.0.0.1", 0, "127.0.0.1"));
    CHECK(serve_host_is_allowed("127.0.0.1", 0, "[::1]:8080"));
    CHECK(serve_host_is_allowed("127.0.0.1", 0, "LOCALHOST"));
    CHECK(serve_host_is_allowed("127.0.0.1", 0, NULL));
    CHECK(!serve_host_is_allowed("127.0.0.1", 0, "evil.example"));
    CHECK(!serve_host_is_allowed("127.0.0.1", 0, "127.0.0.1.evil.example"));
    CHECK(!serve_host_is_allowed("127.0.0.1", 0, "localhost.evil.example:80"));
    CHECK(!serve_host_is_allowed("127.0.0.1", 0, ""));
    /* --host names another address: that one too. */
    CHECK(serve_host_is_allowed("192.168.1.5", 0, "192.168.1.5:8080"));
    CHECK(!serve_host_is_allowed("192.168.1.5", 0, "192.168.1.6"));
    /* A key, or a wildcard listen address (the operator opened it up). */
    CHECK(serve_host_is_allowed("127.0.0.1", 1, "evil.example"));
    CHECK(serve_host_is_allowed("0.0.0.0", 0, "evil.example"));
    CHECK(serve_origin_is_allowed("127.0.0.1", 0, NULL));
    CHECK(serve_origin_is_allowed("127.0.0.1", 0, "http://localhost:5173"));
    CHECK(serve_origin_is_allowed("127.0.0.1", 0, "https://127.0.0.1"));
    CHECK(!serve_origin_is_allowed("127.0.0.1", 0, "null"));
    CHECK(!serve_origin_is_allowed("127.0.0.1", 0, "http://evil.example"));
    CHECK(!serve_origin_is_allowed("127.0.0.1", 0, "http://localhost.evil.example"));
    CHECK(serve_origin_is_allowed("127.0.0.1", 1, "http://evil.example"));
}

static void test_cors_reflects_header_names_only(void) {
    CHECK(serve_cors_headers_ok("authorization, content-type, x-stainless-os"));
    CHECK(!serve_cors_headers_ok(""));
    CHECK(!serve_cors_headers_ok("x\r\nSet-Cookie: a"));
    CHECK(!serve_cors_headers_ok("a:b"));
}

static void test_model_names(void) {
    const char *aliases[] = {"qwen", "My-Alias"};
    CHECK(serve_model_matches("Qwen3-0.6B", "Qwen3-0.6B", "/m/Qwen3-0.6B", aliases, 2));
    CHECK(serve_model_matches("qwen3-0.6b", "Qwen3-0.6B", NULL, aliases, 2));
    CHECK(serve_model_matches("/m/Qwen3-0.6B", "Qwen3-0.6B", "/m/Qwen3-0.6B", aliases, 2));
    CHECK(serve_model_matches("my-alias", "Qwen3-0.6B", NULL, aliases, 2));
    CHECK(serve_model_matches("gpt-3.5-turbo", "Qwen3-0.6B", NULL, aliases, 0));
    CHECK(serve_model_matches("gpt-4o-mini", "Qwen3-0.6B", NULL, aliases, 0));
    CHECK(!serve_model_matches("llama-3", "Qwen3-0.6B", NULL, aliases, 2));
    CHECK(!serve_model_matches("", "Qwen3-0.6B", NULL, aliases, 2));
}

static void test_ids_are_unique_and_long(void) {
    char a[64], b[64];
    CHECK(serve_make_id("chatcmpl", a, sizeof a) == 0);
    CHECK(serve_make_id("chatcmpl", b, sizeof b) == 0);
    CHECK(strlen(a) == 9 + 32 && !strncmp(a, "chatcmpl-", 9));
    CHECK(strspn(a + 9, "0123456789abcdef") == 32);
    CHECK(strcmp(a, b) != 0);
}

int main(void) {
    RUN(test_heads_get_the_rfc_status);
    RUN(test_hostile_heads_are_judged_at_once);
    RUN(test_keyless_server_answers_only_loopback_names);
    RUN(test_cors_reflects_header_names_only);
    RUN(test_model_names);
    RUN(test_ids_are_unique_and_long);
    return nc_test_exit_code();
}
