/* libmicrohttpd glue: the access handler collects the body (bounded in size
 * and time), checks the API key, routes, and for completions prepares the
 * prompt, submits a job and either waits for it (JSON) or streams it (SSE
 * from a content-reader callback). Connection threads block only on their
 * own job, polling their socket so a client that goes away cancels its
 * generation at the scheduler's next step. */
#include "serve/serve_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/log.h"
#include "base/timer.h"
#include "serve/serve_respond.h"
#include "serve/serve_sched.h"
#include "text/chat.h"

/* How often a waiting connection checks whether its client is still there. */
#define SERVE_POLL_MS 20
/* A stream with nothing new for this long gets an SSE comment line. */
#define SERVE_SSE_PING_S 15.0

struct serve_server {
    gen_model *m;
    serve_options opt;
    serve_sched *sched;
    serve_metrics metrics;
    int has_metrics;
    struct MHD_Daemon *d;
    int port;
    long long started;
    atomic_ulong id_counter;
    atomic_int n_inflight; /* completion requests holding a job */
};

/* Drops the connection's reference to its job. */
static void release_job(serve_server *s, serve_job *j) {
    serve_job_release(j);
    atomic_fetch_sub(&s->n_inflight, 1);
}

typedef struct conn_ctx {
    char what[80]; /* "METHOD /path" for the request log */
    serve_text body;
    int is_rejected; /* 1: answered before the body; 2: body too large, answer at its end */
    double t_start;
    serve_route route;
    int status;
} conn_ctx;

/* ---- small helpers -------------------------------------------------------- */

static void add_common_headers(struct MHD_Response *r, const char *ctype) {
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
}

/* Queues body (malloc'ed, taken; NULL means out of memory -> 500). */
static enum MHD_Result send_body(struct MHD_Connection *c, conn_ctx *cc, int status,
                                 const char *ctype, char *body, const char *retry_after) {
    if (!body) {
        status = 500;
        ctype = "application/json";
        body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
                      "\"param\":null,\"code\":null}}");
        if (!body) return MHD_NO;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    add_common_headers(r, ctype);
    if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
    cc->status = status;
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Queues a response over static bytes (the page, an empty body). */
static enum MHD_Result send_static(struct MHD_Connection *c, conn_ctx *cc, int status,
                                   const char *ctype, const char *bytes) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(bytes), (void *)bytes, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    add_common_headers(r, ctype);
    if (status == 204) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    }
    cc->status = status;
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, conn_ctx *cc, int status,
                                  const char *msg, const char *param, const char *code) {
    return send_body(c, cc, status, "application/json", serve_error_body(status, msg, param, code),
                     (status == 429 || status == 503) ? "1" : NULL);
}

static int client_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* 1 when the peer closed its side (EOF or error on the socket). Data that
 * is merely waiting (a pipelined request) does not count. */
static int client_is_gone(int fd) {
    if (fd < 0) return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLERR | POLLNVAL)) return 1;
    char b;
    ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Waits until the job's version moves past *seen, it is done, or the
 * deadline passes (deadline_s <= 0: none). Returns 0 on progress, 1 when the
 * client went away, 2 on the deadline. */
static int wait_job(serve_job *j, unsigned *seen, int fd, double deadline_s) {
    for (;;) {
        pthread_mutex_lock(&j->mu);
        if (j->version != *seen || j->state == SERVE_JOB_DONE) {
            *seen = j->version;
            pthread_mutex_unlock(&j->mu);
            return 0;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += SERVE_POLL_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        int changed = j->version != *seen || j->state == SERVE_JOB_DONE;
        pthread_mutex_unlock(&j->mu);
        if (changed) continue;
        if (client_is_gone(fd)) return 1;
        if (deadline_s > 0 && nc_now_s() > deadline_s) return 2;
    }
}

static serve_route route_of(const char *url) {
    if (!strcmp(url, "/v1/chat/completions") || !strcmp(url, "/chat/completions"))
        return SERVE_ROUTE_CHAT;
    if (!strcmp(url, "/v1/completions") || !strcmp(url, "/completions"))
        return SERVE_ROUTE_COMPLETIONS;
    if (!strcmp(url, "/v1/models") || !strncmp(url, "/v1/models/", 11) || !strcmp(url, "/models"))
        return SERVE_ROUTE_MODELS;
    if (!strcmp(url, "/health")) return SERVE_ROUTE_HEALTH;
    if (!strcmp(url, "/metrics")) return SERVE_ROUTE_METRICS;
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return SERVE_ROUTE_PAGE;
    return SERVE_ROUTE_OTHER;
}

/* Constant-time comparison, so the key cannot be guessed byte by byte from
 * response timing. */
static int key_matches(const char *given, const char *key) {
    size_t n = strlen(key), m = strlen(given);
    unsigned diff = (unsigned)(n ^ m);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)key[i] ^ (unsigned char)given[i < m ? i : 0];
    return diff == 0;
}

static int is_authorized(const serve_server *s, struct MHD_Connection *c) {
    if (!s->opt.api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return 0;
    h += 7;
    while (*h == ' ')
        h++;
    return key_matches(h, s->opt.api_key);
}

static void make_id(serve_server *s, serve_endpoint ep, char *out, size_t cap) {
    unsigned long n = atomic_fetch_add(&s->id_counter, 1);
    snprintf(out, cap, "%s-%llx%04lx", ep == SERVE_EP_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)s->started, n & 0xffffUL);
}

/* ---- preparing a job ------------------------------------------------------ */

static int ends_with_open_think(const char *text) {
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
        n--;
    return n >= 7 && !memcmp(text + n - 7, "<think>", 7);
}

/* Renders (chat) and tokenizes the prompt, sizes max_tokens. On failure
 * returns the HTTP status to answer with and fills msg/param/code. */
static int prepare_job(serve_server *s, serve_job *j, char *msg, size_t msg_cap, const char **param,
                       const char **code) {
    serve_request *r = &j->req;
    char *text = NULL;
    nc_error err;
    *param = NULL;
    *code = NULL;
    if (r->endpoint == SERVE_EP_CHAT) {
        chat_message *m = calloc(r->n_messages, sizeof *m);
        if (!m) return snprintf(msg, msg_cap, "out of memory"), 500;
        for (size_t i = 0; i < r->n_messages; i++) {
            m[i].role = r->messages[i].role;
            m[i].content = r->messages[i].content;
            m[i].reasoning_content = r->messages[i].reasoning_content;
        }
        chat_options co = {1, r->enable_thinking};
        nc_status st = chat_render(m, r->n_messages, &co, &text, &err);
        free(m);
        if (st != NC_OK) {
            *param = "messages";
            snprintf(msg, msg_cap, "%s", err.msg);
            return 400;
        }
        j->split_reasoning = 1;
        j->starts_in_reasoning = ends_with_open_think(text);
    } else if (r->prompt) {
        text = strdup(r->prompt);
        if (!text) return snprintf(msg, msg_cap, "out of memory"), 500;
    }
    size_t n = 0;
    nc_status st = NC_OK;
    const char *what = r->endpoint == SERVE_EP_CHAT ? "messages" : "prompt";
    if (text) {
        st = tok_encode(s->m->tok, text, strlen(text), &j->prompt, &n, &err);
        free(text);
    } else { /* token ids given: they must name rows of the model */
        for (size_t i = 0; i < r->n_prompt_ids; i++)
            if (r->prompt_ids[i] >= s->m->e->n_vocab) {
                *param = what;
                snprintf(msg, msg_cap, "'prompt[%zu]': token id %d is outside the vocabulary (%d)",
                         i, (int)r->prompt_ids[i], s->m->e->n_vocab);
                return 400;
            }
        j->prompt = r->prompt_ids;
        n = r->n_prompt_ids;
        r->prompt_ids = NULL; /* the job owns them now */
        r->n_prompt_ids = 0;
    }
    if (st != NC_OK) {
        *param = what;
        snprintf(msg, msg_cap, "%s", err.msg);
        return st == NC_ERR_NOMEM ? 500 : 400;
    }
    int ctx = serve_sched_ctx(s->sched);
    if (n == 0) {
        *param = what;
        snprintf(msg, msg_cap, "'%s' is empty: there is nothing to continue", what);
        return 400;
    }
    if (n >= (size_t)ctx) {
        *param = what;
        *code = "context_length_exceeded";
        snprintf(msg, msg_cap,
                 "the prompt has %zu tokens but the context holds %d (at least one must be left to "
                 "generate)",
                 n, ctx);
        return 400;
    }
    j->n_prompt = (int)n;
    int room = ctx - j->n_prompt;
    j->max_tokens = r->max_tokens < 0 || r->max_tokens > room ? room : r->max_tokens;
    return 200;
}

/* ---- responses from a job ------------------------------------------------- */

static void job_usage(serve_job *j, serve_usage *u) {
    u->prompt_tokens = j->n_prompt;
    u->completion_tokens = j->n_generated;
    u->cached_tokens = j->n_cached;
    double t_first = j->t_first_token > 0 ? j->t_first_token : j->t_done;
    u->prompt_ms = j->t_start > 0 ? 1000.0 * (t_first - j->t_start) : 0;
    u->predicted_ms = j->t_first_token > 0 ? 1000.0 * (j->t_done - j->t_first_token) : 0;
    u->ttft_ms = j->t_first_token > 0 ? 1000.0 * (j->t_first_token - j->t_submit) : 0;
}

typedef struct stream_ctx {
    serve_server *s;
    serve_job *job;
    int fd;
    serve_resp_id rid;
    serve_text out;
    size_t out_off;
    size_t sent_reasoning, sent_content, sent_lp;
    unsigned seen;
    int sent_first, is_finished;
} stream_ctx;

/* Appends SSE events for everything new in the job; sets is_finished after
 * the closing events. Called with j->mu held. */
static void stream_collect(stream_ctx *sc) {
    serve_job *j = sc->job;
    serve_delta d = {0};
    d.reasoning = j->reasoning.p ? j->reasoning.p + sc->sent_reasoning : NULL;
    d.reasoning_len = j->reasoning.len - sc->sent_reasoning;
    d.content = j->content.p ? j->content.p + sc->sent_content : NULL;
    d.content_len = j->content.len - sc->sent_content;
    json_t *lp = NULL;
    size_t n_lp = json_array_size(j->logprobs);
    if (j->req.logprobs) {
        lp = json_array();
        for (size_t i = sc->sent_lp; i < n_lp; i++)
            json_array_append(lp, json_array_get(j->logprobs, i));
        d.logprobs = lp;
    }
    int has_news = d.reasoning_len || d.content_len || n_lp > sc->sent_lp;
    char *ev = NULL;
    if (has_news || !sc->sent_first) {
        ev = serve_chunk(&sc->rid, &d, !sc->sent_first, NULL);
        if (ev) serve_text_append(&sc->out, ev, strlen(ev));
        free(ev);
        sc->sent_first = 1;
    }
    json_decref(lp);
    sc->sent_reasoning = j->reasoning.len;
    sc->sent_content = j->content.len;
    sc->sent_lp = n_lp;
    if (j->state != SERVE_JOB_DONE) return;
    if (j->status != NC_OK) {
        int is_shutdown = j->finish_reason && !strcmp(j->finish_reason, "cancelled");
        ev = serve_error_body(is_shutdown ? 503 : 500, j->error, NULL,
                              is_shutdown ? "shutting_down" : NULL);
        if (ev) {
            serve_text_append(&sc->out, "data: ", 6);
            serve_text_append(&sc->out, ev, strlen(ev));
            serve_text_append(&sc->out, "\n\n", 2);
        }
        free(ev);
    } else {
        ev = serve_chunk(&sc->rid, NULL, 0, j->finish_reason ? j->finish_reason : "stop");
        if (ev) serve_text_append(&sc->out, ev, strlen(ev));
        free(ev);
        if (j->req.include_usage) {
            serve_usage u;
            job_usage(j, &u);
            ev = serve_usage_chunk(&sc->rid, &u);
            if (ev) serve_text_append(&sc->out, ev, strlen(ev));
            free(ev);
        }
    }
    serve_text_append(&sc->out, "data: [DONE]\n\n", 14);
    sc->is_finished = 1;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_ctx *sc = cls;
    while (sc->out_off == sc->out.len) {
        if (sc->is_finished) return MHD_CONTENT_READER_END_OF_STREAM;
        sc->out.len = 0;
        sc->out_off = 0;
        int w = wait_job(sc->job, &sc->seen, sc->fd, nc_now_s() + SERVE_SSE_PING_S);
        if (w == 1) {
            serve_sched_cancel(sc->s->sched, sc->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (w == 2) { /* a long prefill: an SSE comment keeps proxies and clients patient */
            serve_text_append(&sc->out, ": ping\n\n", 8);
            continue;
        }
        pthread_mutex_lock(&sc->job->mu);
        stream_collect(sc);
        pthread_mutex_unlock(&sc->job->mu);
    }
    size_t n = sc->out.len - sc->out_off;
    if (n > max) n = max;
    memcpy(buf, sc->out.p + sc->out_off, n);
    sc->out_off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls) {
    stream_ctx *sc = cls;
    pthread_mutex_lock(&sc->job->mu);
    int done = sc->job->state == SERVE_JOB_DONE;
    pthread_mutex_unlock(&sc->job->mu);
    if (!done) serve_sched_cancel(sc->s->sched, sc->job);
    release_job(sc->s, sc->job);
    free(sc->out.p);
    free(sc);
}

static enum MHD_Result start_stream(serve_server *s, struct MHD_Connection *c, conn_ctx *cc,
                                    serve_job *j, const serve_resp_id *rid, unsigned seen) {
    stream_ctx *sc = calloc(1, sizeof *sc);
    if (!sc) return send_error(c, cc, 500, "out of memory", NULL, NULL);
    sc->s = s;
    sc->job = j; /* takes the connection's reference */
    sc->fd = client_fd(c);
    sc->rid = *rid;
    sc->seen = seen;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, sc, stream_free);
    if (!r) {
        stream_free(sc);
        return MHD_NO;
    }
    add_common_headers(r, "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    cc->status = 200;
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle_completion(serve_server *s, struct MHD_Connection *c, conn_ctx *cc,
                                         serve_endpoint ep) {
    serve_request req;
    serve_parse_error perr;
    nc_error err = {0};
    nc_status st =
        serve_request_parse(cc->body.p ? cc->body.p : "", cc->body.len, ep, &req, &perr, &err);
    if (st != NC_OK)
        return send_error(c, cc, 400, err.msg, perr.param,
                          st == NC_ERR_FORMAT ? "invalid_json" : "invalid_value");
    if (req.model && strcmp(req.model, s->m->model_id) != 0 &&
        !(s->opt.model_path && !strcmp(req.model, s->opt.model_path))) {
        char msg[512];
        snprintf(msg, sizeof msg, "model '%.200s' does not exist; this server has '%.200s'",
                 req.model, s->m->model_id);
        serve_request_free(&req);
        return send_error(c, cc, 404, msg, "model", "model_not_found");
    }
    serve_job *j = serve_job_new(&req);
    if (j) atomic_fetch_add(&s->n_inflight, 1);
    if (!j) {
        serve_request_free(&req);
        return send_error(c, cc, 500, "out of memory", NULL, NULL);
    }
    j->t_submit = cc->t_start;
    char msg[512];
    const char *param, *code;
    int status = prepare_job(s, j, msg, sizeof msg, &param, &code);
    if (status != 200) {
        release_job(s, j);
        return send_error(c, cc, status, msg, param, code ? code : "invalid_value");
    }
    if (serve_sched_submit(s->sched, j, &err) != NC_OK) {
        release_job(s, j);
        return send_error(
            c, cc, 429,
            "the server is busy: all slots are generating and the queue is full; retry later", NULL,
            "queue_full");
    }
    /* Wait for a slot (bounded by --timeout), then stream or wait for the end. */
    int fd = client_fd(c);
    double deadline = cc->t_start + s->opt.timeout_s;
    unsigned seen = 0;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int queued = j->state == SERVE_JOB_QUEUED;
        pthread_mutex_unlock(&j->mu);
        if (!queued) break;
        int w = wait_job(j, &seen, fd, deadline);
        if (w != 0) {
            serve_sched_cancel(s->sched, j);
            release_job(s, j);
            if (w == 1) return MHD_NO; /* nobody to answer */
            return send_error(c, cc, 504, "timed out waiting for a free slot", NULL, "timeout");
        }
    }
    serve_resp_id rid;
    make_id(s, ep, rid.id, sizeof rid.id);
    rid.created = (long long)time(NULL);
    rid.model = s->m->model_id;
    rid.endpoint = ep;
    if (j->req.stream) return start_stream(s, c, cc, j, &rid, 0);
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int done = j->state == SERVE_JOB_DONE;
        pthread_mutex_unlock(&j->mu);
        if (done) break;
        if (wait_job(j, &seen, fd, 0) == 1) {
            serve_sched_cancel(s->sched, j);
            release_job(s, j);
            return MHD_NO;
        }
    }
    enum MHD_Result ret;
    if (j->status != NC_OK) {
        int is_shutdown = j->finish_reason && !strcmp(j->finish_reason, "cancelled");
        ret = send_error(c, cc, is_shutdown ? 503 : 500, j->error, NULL,
                         is_shutdown ? "shutting_down" : NULL);
    } else {
        serve_delta d = {j->reasoning.p, j->reasoning.len, j->content.p, j->content.len,
                         j->req.logprobs ? j->logprobs : NULL};
        serve_usage u;
        job_usage(j, &u);
        ret = send_body(c, cc, 200, "application/json",
                        serve_response_full(&rid, &d, j->finish_reason, &u), NULL);
    }
    release_job(s, j);
    return ret;
}

/* ---- other routes ----------------------------------------------------------- */

static json_t *model_json(serve_server *s) {
    return json_pack("{s:s,s:s,s:I,s:s,s:{s:i,s:i,s:s}}", "id", s->m->model_id, "object", "model",
                     "created", (json_int_t)s->started, "owned_by", "nectar", "meta", "n_vocab",
                     s->m->e->n_vocab, "n_ctx", serve_sched_ctx(s->sched), "engine", s->m->e->kind);
}

static char *dump_json(json_t *o) {
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return t;
}

static enum MHD_Result handle_models(serve_server *s, struct MHD_Connection *c, conn_ctx *cc,
                                     const char *url) {
    const char *name = !strncmp(url, "/v1/models/", 11) ? url + 11 : NULL;
    if (name && *name) {
        if (strcmp(name, s->m->model_id) != 0)
            return send_error(c, cc, 404, "no such model", "model", "model_not_found");
        return send_body(c, cc, 200, "application/json", dump_json(model_json(s)), NULL);
    }
    return send_body(c, cc, 200, "application/json",
                     dump_json(json_pack("{s:s,s:[o]}", "object", "list", "data", model_json(s))),
                     NULL);
}

static enum MHD_Result dispatch(serve_server *s, struct MHD_Connection *c, conn_ctx *cc,
                                const char *url, const char *method) {
    int is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    int is_post = !strcmp(method, "POST");
    if (!strcmp(method, "OPTIONS")) /* CORS preflight from the browser */
        return send_static(c, cc, 204, "text/plain", "");
    switch (cc->route) {
    case SERVE_ROUTE_HEALTH:
        if (!is_get) break;
        return send_body(c, cc, 200, "application/json", strdup("{\"status\":\"ok\"}"), NULL);
    case SERVE_ROUTE_PAGE:
        if (!is_get) break;
        return send_static(c, cc, 200, "text/html; charset=utf-8", serve_page_html);
    default:
        break;
    }
    if (cc->route == SERVE_ROUTE_OTHER)
        return send_error(c, cc, 404, "no such endpoint", NULL, "not_found");
    if (!is_authorized(s, c))
        return send_error(c, cc, 401,
                          "invalid or missing API key (send 'Authorization: Bearer KEY')", NULL,
                          "invalid_api_key");
    switch (cc->route) {
    case SERVE_ROUTE_MODELS:
        if (is_get) return handle_models(s, c, cc, url);
        break;
    case SERVE_ROUTE_METRICS:
        if (is_get)
            return send_body(c, cc, 200, "text/plain; version=0.0.4",
                             serve_metrics_render(&s->metrics), NULL);
        break;
    case SERVE_ROUTE_CHAT:
        if (is_post) return handle_completion(s, c, cc, SERVE_EP_CHAT);
        break;
    case SERVE_ROUTE_COMPLETIONS:
        if (is_post) return handle_completion(s, c, cc, SERVE_EP_COMPLETIONS);
        break;
    default:
        break;
    }
    return send_error(c, cc, 405, "method not allowed on this endpoint", NULL,
                      "method_not_allowed");
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls) {
    (void)version;
    serve_server *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) {
        cc = calloc(1, sizeof *cc);
        if (!cc) return MHD_NO;
        cc->t_start = nc_now_s();
        cc->route = route_of(url);
        snprintf(cc->what, sizeof cc->what, "%.10s %.60s", method, url);
        *con_cls = cc;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (errno || *end || n > s->opt.max_body_bytes) {
                cc->is_rejected = 1;
                return send_error(c, cc, 413, "request body is larger than the limit (--max-body)",
                                  NULL, "body_too_large");
            }
        }
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        /* libmicrohttpd accepts a response only before the body starts or
         * after it ends, so a body that is too slow can only be cut off
         * (the connection closes), and one that grows past the limit
         * without a Content-Length is read and dropped, then answered. */
        if (nc_now_s() - cc->t_start > s->opt.timeout_s) {
            nc_log(NC_LOG_DEBUG, "http: request body slower than --timeout; closing");
            cc->status = 408;
            return MHD_NO;
        }
        if (cc->is_rejected) return MHD_YES;
        if (cc->body.len + n > s->opt.max_body_bytes) {
            cc->is_rejected = 2;
            return MHD_YES;
        }
        if (serve_text_append(&cc->body, upload, n) != 0) return MHD_NO;
        return MHD_YES;
    }
    if (cc->is_rejected == 2)
        return send_error(c, cc, 413, "request body is larger than the limit (--max-body)", NULL,
                          "body_too_large");
    if (cc->is_rejected) return MHD_YES;
    return dispatch(s, c, cc, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)c;
    serve_server *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) return;
    double dt = nc_now_s() - cc->t_start;
    serve_metrics_request(&s->metrics, cc->route, cc->status ? cc->status : 499, dt);
    nc_log(NC_LOG_DEBUG, "http: %s -> %d in %.1f ms%s", cc->what, cc->status ? cc->status : 499,
           1000.0 * dt,
           toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
    free(cc->body.p);
    free(cc);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    if (nc_log_get_level() > NC_LOG_DEBUG) return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    nc_log(NC_LOG_DEBUG, "http: %s", line);
}

/* ---- start / stop ----------------------------------------------------------- */

nc_status serve_server_start(gen_model *m, const serve_options *opt, serve_server **out,
                             nc_error *err) {
    *out = NULL;
    if (opt->port < 0 || opt->port > 65535)
        return nc_fail(err, NC_ERR_INVALID, "--port %d: must be between 0 and 65535", opt->port);
    if (opt->timeout_s <= 0) return nc_fail(err, NC_ERR_INVALID, "--timeout must be positive");
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, opt->host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)opt->port);
        addr = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, opt->host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)opt->port);
        addr = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        return nc_fail(err, NC_ERR_INVALID, "--host '%s': not a numeric IPv4 or IPv6 address",
                       opt->host);
    }
    serve_server *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    s->m = m;
    s->opt = *opt;
    s->started = (long long)time(NULL);
    atomic_init(&s->id_counter, 1);
    atomic_init(&s->n_inflight, 0);
    if (serve_metrics_init(&s->metrics, opt->n_parallel) != 0) {
        free(s);
        return nc_fail(err, NC_ERR_INTERNAL, "serve: cannot create the metrics lock");
    }
    s->has_metrics = 1;
    serve_sched_options so = {0};
    so.n_slots = opt->n_parallel;
    so.ctx = opt->ctx;
    so.queue_max = opt->queue_max;
    /* OpenAI's defaults where the model folder says nothing */
    so.defaults = gen_sampler_defaults_greedy();
    so.defaults.temperature = 1.0f;
    so.defaults.top_p = 1.0f;
    nc_status st =
        opt->model_path ? gen_sampling_from_folder(opt->model_path, 0, &so.defaults, err) : NC_OK;
    if (st == NC_OK) st = serve_sched_new(m, &so, &s->metrics, &s->sched, err);
    if (st != NC_OK) {
        serve_server_stop(s);
        return st;
    }
    unsigned max_conn = opt->max_connections > 0 ? (unsigned)opt->max_connections : 256;
    s->d = MHD_start_daemon(flags, (uint16_t)opt->port, NULL, NULL, on_access, s,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)opt->timeout_s,
                            MHD_OPTION_CONNECTION_LIMIT, max_conn, MHD_OPTION_NOTIFY_COMPLETED,
                            on_completed, s, MHD_OPTION_END);
    if (!s->d) {
        serve_server_stop(s);
        return nc_fail(err, NC_ERR_IO,
                       "serve: cannot listen on %s:%d (address in use or not allowed?)", opt->host,
                       opt->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : opt->port;
    *out = s;
    return NC_OK;
}

int serve_server_port(const serve_server *s) {
    return s->port;
}

void serve_server_stop(serve_server *s) {
    if (!s) return;
    /* End every job first: connection threads waiting on one wake up and
     * answer (an error, or the stream's last events); then the daemon can
     * join them; the scheduler is freed only when no thread can reach it. */
    serve_sched_stop(s->sched);
    /* A moment for the connections to send their last words (the error
     * event and [DONE], or a 503) before the daemon closes their sockets. */
    for (int i = 0; i < 100 && atomic_load(&s->n_inflight) > 0; i++) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (s->d) MHD_stop_daemon(s->d);
    serve_sched_free(s->sched);
    if (s->has_metrics) serve_metrics_destroy(&s->metrics);
    free(s);
}
