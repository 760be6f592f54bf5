/* Host/Origin, CORS and model-name rules (see serve_policy.h). Names are
 * compared as the browser sends them: the Host header and the host part of
 * an Origin, lower-cased, brackets kept for IPv6 literals. */
#include "serve/serve_policy.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/random_id.h"

/* The host part of "host[:port]" or "[v6][:port]" into out (lower case,
 * IPv6 without brackets); 0 when it does not parse. */
static int host_part(const char *s, size_t n, char *out, size_t cap) {
    const char *end = s + n;
    if (n && *s == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) return 0;
        s++;
        end = close;
    } else {
        const char *colon = memchr(s, ':', n);
        if (colon) end = colon;
    }
    size_t len = (size_t)(end - s);
    if (len == 0 || len >= cap) return 0;
    for (size_t i = 0; i < len; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[len] = '\0';
    return 1;
}

static int is_wildcard(const char *h) {
    return !strcmp(h, "0.0.0.0") || !strcmp(h, "::") || !strcmp(h, "[::]");
}

static int name_is_allowed(const char *listen_host, const char *name) {
    if (!strcmp(name, "localhost") || !strcmp(name, "::1")) return 1;
    if (!strncmp(name, "127.", 4) && strspn(name, "0123456789.") == strlen(name)) return 1;
    return !strcasecmp(name, listen_host);
}

int serve_host_is_allowed(const char *listen_host, int has_key, const char *host_header) {
    if (has_key || is_wildcard(listen_host) || !host_header) return 1;
    char name[256];
    if (!host_part(host_header, strlen(host_header), name, sizeof name)) return 0;
    return name_is_allowed(listen_host, name);
}

int serve_origin_is_allowed(const char *listen_host, int has_key, const char *origin) {
    if (has_key || is_wildcard(listen_host) || !origin) return 1;
    const char *sep = strstr(origin, "://");
    if (!sep) return 0;
    const char *h = sep + 3;
    size_t n = strcspn(h, "/");
    char name[256];
    if (!host_part(h, n, name, sizeof name)) return 0;
    return name_is_allowed(listen_host, name);
}

int serve_cors_headers_ok(const char *requested) {
    size_t n = strlen(requested);
    if (n == 0 || n > 1024) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)requested[i];
        if (!isalnum(c) && !strchr("!#$%&'*+-.^_`|~, \t", c)) return 0;
    }
    return 1;
}

static int has_prefix_nocase(const char *s, const char *p) {
    return !strncasecmp(s, p, strlen(p));
}

int serve_model_matches(const char *asked, const char *model_id, const char *model_path,
                        const char *const *aliases, int n_aliases) {
    if (!strcasecmp(asked, model_id)) return 1;
    if (model_path && !strcmp(asked, model_path)) return 1;
    for (int i = 0; i < n_aliases; i++)
        if (!strcasecmp(asked, aliases[i])) return 1;
    static const char *const openai[] = {"gpt-", "o1", "o3", "o4", "chatgpt-", "text-"};
    for (size_t i = 0; i < sizeof openai / sizeof *openai; i++)
        if (has_prefix_nocase(asked, openai[i])) return 1;
    return 0;
}

int serve_make_id(const char *prefix, char *out, size_t cap) {
    return nc_random_id(prefix, out, cap);
}
