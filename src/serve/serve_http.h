/* The HTTP front of `nectar serve`, on libmicrohttpd (one thread per
 * connection, so a connection may block while its request generates):
 * routing, API-key check, body limits, timeouts, the OpenAI endpoints and
 * SSE streaming, /health, /metrics and the chat page. */
#ifndef NC_SERVE_HTTP_H
#define NC_SERVE_HTTP_H

#include <stddef.h>

#include "gen/model.h"
#include "serve/serve_encoders.h"

typedef struct serve_options {
    const char *host;       /* numeric IPv4 or IPv6 address */
    int port;               /* 0: any free port (see serve_server_port) */
    const char *api_key;    /* NULL: no authentication */
    const char *model_path; /* the -m argument, also accepted as a model name */
    int n_parallel;         /* slots */
    int ctx;                /* tokens per slot */
    int queue_max;          /* waiting requests beyond the slots */
    size_t max_body_bytes;
    int timeout_s;              /* idle connection, body upload and queue wait limit */
    int max_connections;        /* open connections; beyond: 503 (0: 512) */
    int max_per_ip;             /* open connections per client address (0: half the above) */
    double header_timeout_s;    /* from accept to the end of the request head (0: 10 s) */
    const char *const *aliases; /* more names for the model (--alias) */
    int n_aliases;
    const char *chat_template; /* "qwen3" or "qwen3.5"; NULL: the model family's */
    serve_encoders *encoders;  /* hosted beside the generator (serve_encoders.h); NULL: none */
    int parse_special_in_content; /* 1: "<|im_end|>" in a message is the special token (HF);
                                     0: such a request is refused (serve_special.h) */
} serve_options;

typedef struct serve_server serve_server;

/* Starts the scheduler and the listener; the model must outlive the server.
 * m may be NULL when opt->encoders hosts at least one encoder.
 * Sampling defaults come from opt->model_path's generation_config.json. */
nc_status serve_server_start(gen_model *m, const serve_options *opt, serve_server **out,
                             nc_error *err);
int serve_server_port(const serve_server *s);
/* Stops accepting, ends running requests, frees everything. */
void serve_server_stop(serve_server *s);

/* The chat page served at GET / (serve_page.c). */
extern const char serve_page_html[];

#endif
