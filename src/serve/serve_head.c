/* Request-head checks (see serve_head.h), after RFC 9112: an origin-form
 * request line with HTTP/1.0 or 1.1, CRLF line ends, token field names,
 * values without control bytes, one Host on 1.1, at most one decimal
 * Content-Length. A chunked body is refused with 411 rather than parsed:
 * every client of an LLM API sends a Content-Length, and a length known up
 * front is what lets the body bound be checked before reading. */
#include "serve/serve_head.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int is_tchar(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void verdict(serve_head_verdict *v, int status, const char *code, const char *msg) {
    v->status = status;
    v->code = code;
    snprintf(v->msg, sizeof v->msg, "%s", msg);
}

static const char *find_crlf(const char *p, const char *end) {
    for (; p + 1 < end; p++)
        if (p[0] == '\r' && p[1] == '\n') return p;
    return NULL;
}

/* The request line [p, eol). Returns 0 or fills v. */
static int check_request_line(const char *p, const char *eol, int *is_http11,
                              serve_head_verdict *v) {
    const char *m = p;
    while (p < eol && is_tchar((unsigned char)*p))
        p++;
    if (p == m || p - m > 20 || p == eol || *p != ' ')
        return verdict(v, 400, "bad_request", "malformed request line (method)"), -1;
    const char *t = ++p;
    while (p < eol && (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f)
        p++;
    if (p == t || p == eol || *p != ' ')
        return verdict(v, 400, "bad_request", "malformed request line (target)"), -1;
    if (*t != '/' && !(p - t == 1 && *t == '*'))
        return verdict(v, 400, "bad_request", "the request target must be a path"), -1;
    p++;
    if (eol - p != 8 || memcmp(p, "HTTP/", 5) != 0 || p[5] < '0' || p[5] > '9' || p[6] != '.' ||
        p[7] < '0' || p[7] > '9')
        return verdict(v, 400, "bad_request", "malformed request line (version)"), -1;
    if (p[5] != '1' || (p[7] != '0' && p[7] != '1'))
        return verdict(v, 505, "http_version_not_supported",
                       "only HTTP/1.0 and HTTP/1.1 are served"),
               -1;
    *is_http11 = p[7] == '1';
    return 0;
}

/* Strict decimal with optional surrounding blanks; -1 when not one. */
static long long parse_length(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (p == end || end - p > 18) return -1;
    long long n = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9') return -1;
        n = n * 10 + (*p - '0');
    }
    return n;
}

static int name_is(const char *name, size_t n, const char *want) {
    return n == strlen(want) && !strncasecmp(name, want, n);
}

void serve_head_check(const char *buf, size_t len, int is_eof, const serve_head_limits *lim,
                      serve_head_verdict *v) {
    memset(v, 0, sizeof *v);
    const char *end = buf + len;
    const char *eol = find_crlf(buf, end);
    if (!eol) {
        if (len >= lim->max_line_bytes)
            return verdict(v, 414, "uri_too_long", "the request line is longer than the limit");
        if (is_eof && len) verdict(v, 400, "bad_request", "the request head is incomplete");
        return;
    }
    if ((size_t)(eol - buf) + 2 > lim->max_line_bytes)
        return verdict(v, 414, "uri_too_long", "the request line is longer than the limit");
    int is_http11 = 0;
    if (check_request_line(buf, eol, &is_http11, v) != 0) return;
    int n_host = 0, n_length = 0, has_te = 0;
    long long length = 0;
    const char *p = eol + 2;
    for (;;) {
        eol = find_crlf(p, end);
        if (!eol) {
            if (len >= lim->max_head_bytes)
                return verdict(v, 431, "headers_too_large", "the request headers are too large");
            if (is_eof) verdict(v, 400, "bad_request", "the request head is incomplete");
            return;
        }
        if ((size_t)(eol + 2 - buf) > lim->max_head_bytes)
            return verdict(v, 431, "headers_too_large", "the request headers are too large");
        if (eol == p) break; /* the blank line ending the head */
        const char *name = p, *colon = p;
        while (colon < eol && is_tchar((unsigned char)*colon))
            colon++;
        if (colon == name || colon == eol || *colon != ':')
            return verdict(v, 400, "bad_request", "malformed header field");
        for (const char *c = colon + 1; c < eol; c++) {
            unsigned char u = (unsigned char)*c;
            if ((u < 0x20 && u != '\t') || u == 0x7f)
                return verdict(v, 400, "bad_request", "control byte in a header value");
        }
        size_t nlen = (size_t)(colon - name);
        if (name_is(name, nlen, "Host")) n_host++;
        if (name_is(name, nlen, "Transfer-Encoding")) has_te = 1;
        if (name_is(name, nlen, "Content-Length")) {
            n_length++;
            length = parse_length(colon + 1, eol);
            if (length < 0)
                return verdict(v, 400, "bad_request", "Content-Length is not a decimal number");
        }
        p = eol + 2;
    }
    if (is_http11 && n_host != 1)
        return verdict(v, 400, "bad_request", "an HTTP/1.1 request needs exactly one Host header");
    if (n_host > 1) return verdict(v, 400, "bad_request", "more than one Host header");
    if (n_length > 1) return verdict(v, 400, "bad_request", "more than one Content-Length header");
    if (has_te && n_length)
        return verdict(v, 400, "bad_request", "both Transfer-Encoding and Content-Length");
    if (has_te)
        return verdict(v, 411, "length_required",
                       "send the body with a Content-Length (chunked bodies are not accepted)");
    if ((unsigned long long)length > lim->max_body_bytes)
        return verdict(v, 413, "body_too_large",
                       "request body is larger than the limit (--max-body)");
    v->status = 200;
    v->head_len = (size_t)(p + 2 - buf);
}
