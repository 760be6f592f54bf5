/* Request-head checks (see serve_head.h), after RFC 9112: an origin-form
 * request line with HTTP/1.0 or 1.1, CRLF line ends, token field names,
 * values without control bytes, one Host on 1.1, at most one decimal
 * Content-Length, at most one Authorization. A chunked body is refused with
 * 411 rather than parsed: every client of an LLM API sends a Content-Length,
 * and a length known up front is what lets the body bound be checked before
 * reading. A head that can no longer become valid (a bare LF, junk where
 * the method belongs) is refused as soon as it is seen, not at the header
 * deadline. */
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
    /* The HTTP library decodes the path, and a NUL would end it there:
     * /v1/models/demo%00x would name "demo". */
    for (const char *q = t; q + 2 < p; q++)
        if (q[0] == '%' && q[1] == '0' && q[2] == '0')
            return verdict(v, 400, "bad_request", "the request target holds %00 (a NUL byte)"),
                   -1;
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

/* A CR must start a CRLF and an LF must end one: a bare one (an LF-only
 * head) is refused at once. A CR as the last byte so far may still get its
 * LF. */
static int has_bare_cr_or_lf(const char *buf, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) return 1;
        if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n') return 1;
    }
    return 0;
}

/* 1 when [p, end), the start of a request line whose end has not arrived,
 * can still become a valid one: a method, a space, a target, a space, a
 * prefix of "HTTP/". Junk is refused now instead of at the header deadline. */
static int could_be_request_line(const char *p, const char *end) {
    const char *m = p;
    while (p < end && is_tchar((unsigned char)*p))
        p++;
    if (p - m > 20) return 0;
    if (p == end) return 1;
    if (p == m || *p != ' ') return 0;
    const char *t = ++p;
    while (p < end && (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f)
        p++;
    if (p == t) return p == end;
    if (*t != '/' && !(*t == '*' && p - t == 1)) return 0; /* a path, or * alone */
    if (p == end) return 1;
    if (*p != ' ') return 0;
    p++;
    static const char version[] = "HTTP/1.1\r";
    for (size_t i = 0; p < end; p++, i++) {
        if (i >= sizeof version - 1) return 0;
        int is_digit = *p >= '0' && *p <= '9';
        if (version[i] == '1' ? !is_digit : *p != version[i]) return 0;
    }
    return 1;
}

/* 1 when [p, end), a header line whose end has not arrived, can still
 * become a field: a token name, then after the colon no control byte. */
static int could_be_field(const char *p, const char *end) {
    const char *c = p;
    while (c < end && is_tchar((unsigned char)*c))
        c++;
    if (c == end) return 1;
    if (*c == '\r') return c + 1 == end; /* the blank line's CR, or a name's end */
    if (c == p || *c != ':') return 0;
    for (c++; c < end; c++) {
        unsigned char u = (unsigned char)*c;
        if ((u < 0x20 && u != '\t' && !(u == '\r' && c + 1 == end)) || u == 0x7f) return 0;
    }
    return 1;
}

static int name_is(const char *name, size_t n, const char *want) {
    return n == strlen(want) && !strncasecmp(name, want, n);
}

void serve_head_check(const char *buf, size_t len, int is_eof, const serve_head_limits *lim,
                      serve_head_verdict *v) {
    memset(v, 0, sizeof *v);
    const char *end = buf + len;
    /* RFC 9112 2.2: one empty line before the request line is ignored. */
    if (len == 1 && buf[0] == '\r') { /* its LF may still come */
        if (is_eof) verdict(v, 400, "bad_request", "the request head is incomplete");
        return;
    }
    if (len >= 2 && buf[0] == '\r' && buf[1] == '\n') {
        v->skip = 2;
        buf += 2;
        len -= 2;
    }
    /* Only the head: a body that follows may hold any bytes. */
    size_t head_part = len;
    for (size_t i = 0; i + 3 < len; i++)
        if (!memcmp(buf + i, "\r\n\r\n", 4)) {
            head_part = i + 4;
            break;
        }
    if (has_bare_cr_or_lf(buf, head_part))
        return verdict(v, 400, "bad_request", "a line ends without CRLF (bare CR or LF)");
    const char *eol = find_crlf(buf, end);
    if (!eol) {
        if (len >= lim->max_line_bytes)
            return verdict(v, 414, "uri_too_long", "the request line is longer than the limit");
        if (!could_be_request_line(buf, end))
            return verdict(v, 400, "bad_request", "malformed request line");
        if (is_eof && end > buf - v->skip) /* anything at all came */
            verdict(v, 400, "bad_request", "the request head is incomplete");
        return;
    }
    if ((size_t)(eol - buf) + 2 > lim->max_line_bytes)
        return verdict(v, 414, "uri_too_long", "the request line is longer than the limit");
    int is_http11 = 0;
    if (check_request_line(buf, eol, &is_http11, v) != 0) return;
    int n_host = 0, n_length = 0, n_auth = 0, has_te = 0;
    long long length = 0;
    const char *p = eol + 2;
    for (;;) {
        eol = find_crlf(p, end);
        if (!eol) {
            if (len >= lim->max_head_bytes)
                return verdict(v, 431, "headers_too_large", "the request headers are too large");
            if (!could_be_field(p, end))
                return verdict(v, 400, "bad_request", "malformed header field");
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
        if (name_is(name, nlen, "Authorization")) n_auth++;
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
    if (n_auth > 1) return verdict(v, 400, "bad_request", "more than one Authorization header");
    if (has_te && n_length)
        return verdict(v, 400, "bad_request", "both Transfer-Encoding and Content-Length");
    if (has_te)
        return verdict(v, 411, "length_required",
                       "send the body with a Content-Length (chunked bodies are not accepted)");
    if ((unsigned long long)length > lim->max_body_bytes)
        return verdict(v, 413, "body_too_large",
                       "request body is larger than the limit (--max-body)");
    v->status = 200;
    v->head_len = v->skip + (size_t)(p + 2 - buf);
}
