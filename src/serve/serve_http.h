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
    int context_shift; /* 1: a chat that does not fit drops its oldest turns (the request's
                          "context_shift" decides when it has one) */
    /* More text generators after the first (m), each with its own slots
     * (n_parallel) and context; a request's model picks one. */
    gen_model *const *more_models;
    const char *const *more_paths; /* their -m */
    int n_more_models;
} serve_options;

#define SERVE_MAX_GENERATORS 8

typedef struct serve_server serve_server;

/* Starts the schedulers and the listener; the models must outlive the
 * server. m may be NULL when opt->encoders hosts at least one encoder.
 * Sampling defaults come from each generator's generation_config.json. */
nc_status serve_server_start(gen_model *m, const serve_options *opt, serve_server **out,
                             nc_error *err);
int serve_server_port(const serve_server *s);
/* Stops accepting, ends running requests, frees everything. */
void serve_server_stop(serve_server *s);

/* The chat page served at GET / (serve_page.c). */
extern const char serve_page_html[];

#endif
