/* Who may use the server and under which names, as pure functions of the
 * request's header values: the Host/Origin guard against DNS rebinding (a
 * keyless server answers only names that cannot point at it from a web
 * page), the CORS headers a preflight may ask for, and which model names a
 * request may give. */
#ifndef NC_SERVE_POLICY_H
#define NC_SERVE_POLICY_H

#include <stddef.h>

/* listen_host: the --host address; has_key: --api-key is set. A keyed
 * server, or one listening on a wildcard address (0.0.0.0, ::), takes any
 * name; otherwise only loopback names (localhost, 127.0.0.1, [::1]) and the
 * --host address itself. host_header may carry a port. NULL is allowed
 * (HTTP/1.0 without Host). */
int serve_host_is_allowed(const char *listen_host, int has_key, const char *host_header);

/* Origin "scheme://host[:port]" under the same rule; NULL (no Origin: not a
 * browser) is allowed, "null" is not. */
int serve_origin_is_allowed(const char *listen_host, int has_key, const char *origin);

/* Access-Control-Request-Headers may be reflected when it is a list of
 * header names (token characters, commas, blanks) of sane length. */
int serve_cors_headers_ok(const char *requested);

/* The model names a request may give (see docs/server.md): the model id, an
 * --alias or the -m path, compared without case; and any OpenAI model name
 * (gpt-*, o1*, o3*, o4*, chatgpt-*, text-*), which client libraries send by
 * default and which can only mean "the model this server has". */
int serve_model_matches(const char *asked, const char *model_id, const char *model_path,
                        const char *const *aliases, int n_aliases);

/* A response id "PREFIX-" + 32 hex digits from 128 random bits (the
 * system's random source), unique across requests and restarts. Returns 0,
 * or -1 when no random bytes could be read. */
int serve_make_id(const char *prefix, char *out, size_t cap);

#endif
