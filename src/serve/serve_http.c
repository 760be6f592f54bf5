/* libmicrohttpd glue: connections arrive from the gate (serve_gate.c) with
 * their request head already checked; the access handler collects the body
 * (bounded in size and time), checks Host/Origin and the API key, routes,
 * and for completions prepares the prompt, submits a job and either waits
 * for it (JSON) or streams it (SSE from a content-reader callback).
 * Connection threads block only on their own job, polling their socket so a
 * client that goes away cancels its generation at the scheduler's next
 * step. One request per connection: every answer closes it, so each request
 * head passes the gate's deadline and checks. */
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
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/log.h"
#include "base/timer.h"
#include "gen/out_constraint.h"
#include "gen/tool_scan.h"
#include "serve/serve_gate.h"
#include "serve/serve_jsonshape.h"
#include "serve/serve_policy.h"
#include "serve/serve_respond.h"
#include "serve/serve_sched.h"
#include "serve/serve_special.h"
#include "text/chat.h"

/* How often a waiting connection checks whether its client is still there. */
#define SERVE_POLL_MS 20
/* A stream with nothing new for this long gets an SSE comment line. */
#define SERVE_SSE_PING_S 15.0
/* Request line and head bounds (the gate answers 414/431 beyond them), and
 * MHD's per-connection memory, which must hold a whole head with room. */
#define SERVE_MAX_LINE_BYTES 8192
#define SERVE_MAX_HEAD_BYTES 16384
#define SERVE_MHD_POOL_BYTES (64 * 1024)
/* Request bodies are refused beyond these before jansson builds anything
 * (serve_jsonshape.h): 262144 values is 64 times a 4096-token prompt given
 * as ids, and about 12 MB of tree. */
#define SERVE_MAX_JSON_VALUES 262144
#define SERVE_MAX_JSON_DEPTH 128
/* Memory for bodies in flight and their parse, all requests together: at
 * least this, and always room for three of the largest bodies. */
#define SERVE_PARSE_BUDGET_BYTES ((size_t)256 << 20)
/* After a request that held this much, freed memory goes back to the
 * system (glibc keeps it in its arenas otherwise: RSS stayed at 407 MB
 * after ten 8 MB bodies). */
#define SERVE_TRIM_AFTER_BYTES ((size_t)1 << 20)

/* One text generator the server hosts (-m): its model, its scheduler (slots
 * and KV cache), and what requests to it are checked and shaped with. */
typedef struct serve_gen {
    gen_model *m;
    const char *path;           /* its -m: also accepted as its name */
    const char *const *aliases; /* --alias: the first generator's other names */
    int n_aliases;
    serve_sched *sched;
    size_t max_token_bytes; /* the vocabulary's longest token */
    tm_vocab *vocab;        /* constrained output's view of the vocabulary */
    chat_family family;     /* the chat template and tool-call format */
    serve_special *special; /* special-token texts refused in messages */
} serve_gen;

struct serve_server {
    serve_gen gens[SERVE_MAX_GENERATORS];
    int n_gens; /* 0: encoders only */
    serve_options opt;
    serve_metrics metrics;
    int has_metrics;
    struct MHD_Daemon *d;
    serve_gate *gate;
    atomic_int n_started; /* connections MHD announced (see handoff) */
    int port;
    long long started;
    atomic_ulong id_counter; /* ids when no random bytes can be read */
    atomic_int n_inflight;   /* completion requests not yet answered in full */
    atomic_size_t mem_used;  /* bodies in flight and parses under way, estimated */
    size_t mem_budget;       /* beyond it new bodies and parses get 503 */
};

/* Takes n bytes of the parse budget; 0, or -1 when it would be exceeded
 * while others hold some (a single request always fits: see the budget). */
static int mem_take(serve_server *s, size_t n) {
    size_t used = atomic_load(&s->mem_used);
    do {
        if (used && used + n > s->mem_budget) return -1;
    } while (!atomic_compare_exchange_weak(&s->mem_used, &used, used + n));
    return 0;
}

static void mem_give(serve_server *s, size_t n) {
    atomic_fetch_sub(&s->mem_used, n);
}

/* Hands freed memory back to the system after a large request. */
static void trim_after(size_t n) {
#ifdef __GLIBC__
    if (n >= SERVE_TRIM_AFTER_BYTES) malloc_trim(0);
#else
    (void)n;
#endif
}

typedef struct conn_ctx {
    char what[80]; /* "METHOD /path" for the request log */
    serve_text body;
    int is_rejected;   /* 1: answered before the body; 2: body too large, answer at its end */
    size_t reserved;   /* bytes of the parse budget held for the body */
    size_t body_bytes; /* Content-Length: a large request trims memory at its end */
    double t_start;
    serve_route route;
    int status;
    char origin[256];   /* Access-Control-Allow-Origin to send, "" for none */
    int n_shifted;      /* chat: messages a context shift dropped (X-Context-Shift) */
    int holds_inflight; /* counted in n_inflight until on_completed: the answer sent */
} conn_ctx;

/* ---- small helpers -------------------------------------------------------- */

static void add_common_headers(struct MHD_Response *r, const conn_ctx *cc, const char *ctype) {
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Connection", "close");
    if (cc->origin[0]) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", cc->origin);
        MHD_add_response_header(r, "Vary", "Origin");
    }
    if (cc->n_shifted) {
        char n[48];
        snprintf(n, sizeof n, "dropped %d oldest messages", cc->n_shifted);
        MHD_add_response_header(r, "X-Context-Shift", n);
    }
}

/* What each route answers to (the Allow header of a 405). */
static const char *allowed_methods(serve_route route) {
    switch (route) {
    case SERVE_ROUTE_CHAT:
    case SERVE_ROUTE_COMPLETIONS:
    case SERVE_ROUTE_EMBEDDINGS:
    case SERVE_ROUTE_RERANK:
        return "POST, OPTIONS";
    default:
        return "GET, HEAD, OPTIONS";
    }
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
    add_common_headers(r, cc, ctype);
    if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"nectar\"");
    if (status == 405) MHD_add_response_header(r, "Allow", allowed_methods(cc->route));
    cc->status = status;
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Queues a response over static bytes (the page, an empty body). A 204 is
 * the CORS preflight's answer: the methods of the route and the request
 * headers the browser asked about, reflected when they are header names
 * (the openai JS SDK sends x-stainless-*). */
static enum MHD_Result send_static(struct MHD_Connection *c, conn_ctx *cc, int status,
                                   const char *ctype, const char *bytes) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(bytes), (void *)bytes, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    add_common_headers(r, cc, ctype);
    if (!strncmp(ctype, "text/html", 9)) { /* the chat page: never inside another site's frame */
        MHD_add_response_header(r, "X-Frame-Options", "DENY");
        MHD_add_response_header(r, "Content-Security-Policy", "frame-ancestors 'none'");
    }
    if (status == 204) {
        const char *asked =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Headers");
        MHD_add_response_header(r, "Access-Control-Allow-Methods", allowed_methods(cc->route));
        MHD_add_response_header(
            r, "Access-Control-Allow-Headers",
            asked && serve_cors_headers_ok(asked) ? asked : "Authorization, Content-Type");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
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

/* 1 when the connection is broken (reset, error), or, with eof_is_gone,
 * when the client closed its side. An end of file is not always an end: a
 * client may half-close its sending side after the request and still wait
 * for the answer, and TCP cannot tell that apart from a client that closed
 * entirely until something is written. So a non-streaming request whose
 * client closed runs to its end (bounded by max_tokens and the context),
 * its answer dropped, and a stream notices a closed client at its next
 * write (a reset follows). A stream still queued takes the end of file as
 * the end: a client that half-closes and still reads an event stream is
 * not worth a slot's prefill and the first token for every client that
 * hung up while waiting. */
static int client_is_gone(int fd, int eof_is_gone) {
    if (fd < 0) return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLERR | POLLNVAL)) return 1;
    char b;
    ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0) return eof_is_gone;
    return r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

/* Waits until the job's version moves past *seen, it is done, or the
 * deadline passes (deadline_s <= 0: none). Returns 0 on progress, 1 when the
 * client went away, 2 on the deadline. */
static int wait_job(serve_job *j, unsigned *seen, int fd, int eof_is_gone, double deadline_s) {
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
        if (client_is_gone(fd, eof_is_gone)) return 1;
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
    if (!strcmp(url, "/v1/embeddings") || !strcmp(url, "/embeddings"))
        return SERVE_ROUTE_EMBEDDINGS;
    if (!strcmp(url, "/v1/rerank") || !strcmp(url, "/rerank") || !strcmp(url, "/v1/reranking"))
        return SERVE_ROUTE_RERANK;
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
    const char *prefix = ep == SERVE_EP_CHAT ? "chatcmpl" : "cmpl";
    if (serve_make_id(prefix, out, cap) == 0) return;
    /* No random source: start time and a counter, unique within this run. */
    unsigned long n = atomic_fetch_add(&s->id_counter, 1);
    snprintf(out, cap, "%s-%llx%016lx", prefix, (unsigned long long)s->started, n);
}

/* ---- preparing a job ------------------------------------------------------ */

/* The prompt ends inside the family's reasoning block (its template opened
 * it): the reply starts as reasoning. */
static int ends_with_open_think(const model_family_row *f, const char *text) {
    size_t n = strlen(text), k = f->think_open ? strlen(f->think_open) : 0;
    while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
        n--;
    return k && n >= k && !memcmp(text + n - k, f->think_open, k);
}

/* Refuses special-token text in what a chat message puts in the prompt
 * (see serve_special.h); 0 when there is none. */
static int check_special(const serve_gen *g, const serve_request *r, char *msg, size_t msg_cap,
                         char *param, size_t param_cap) {
    for (size_t i = 0; i < r->n_messages; i++) {
        const serve_message *m = &r->messages[i];
        const char *field[3] = {m->content, m->reasoning_content, NULL};
        const char *name[3] = {"content", "reasoning_content", "tool_calls"};
        for (size_t f = 0; f < 3 + 2 * m->n_tool_calls; f++) {
            const char *text = f < 3 ? field[f]
                                     : ((f - 3) % 2 ? m->tool_calls[(f - 3) / 2].arguments
                                                    : m->tool_calls[(f - 3) / 2].name);
            size_t n = 0;
            const char *tok = text ? serve_special_find(g->special, text, strlen(text), &n) : NULL;
            if (!tok) continue;
            snprintf(param, param_cap, "messages[%zu].%s", i, name[f < 3 ? f : 2]);
            snprintf(msg, msg_cap,
                     "'%s' holds the text of the special token '%.*s', which would end or forge "
                     "a turn; escape it, or start the server with --special-in-content parse",
                     param, (int)n, tok);
            return 400;
        }
    }
    return 0;
}

/* The request's conversation through the template of its model's family,
 * with its tools and the calls of earlier assistant turns. */
static nc_status render_chat(const serve_gen *g, const serve_request *r, char **text,
                             nc_error *err) {
    size_t n_all = 0;
    for (size_t i = 0; i < r->n_messages; i++)
        n_all += r->messages[i].n_tool_calls;
    chat_message *m = calloc(r->n_messages, sizeof *m);
    const chat_tool_call **calls = calloc(r->n_messages, sizeof *calls);
    size_t *n_calls = calloc(r->n_messages, sizeof *n_calls);
    chat_tool_call *all = calloc(n_all + 1, sizeof *all);
    nc_status st =
        m && calls && n_calls && all ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "out of memory");
    chat_tool_call *next = all;
    for (size_t i = 0; st == NC_OK && i < r->n_messages; i++) {
        const serve_message *sm = &r->messages[i];
        m[i].role = sm->role;
        m[i].content = sm->content;
        m[i].reasoning_content = sm->reasoning_content;
        calls[i] = next;
        n_calls[i] = sm->n_tool_calls;
        for (size_t k = 0; k < sm->n_tool_calls; k++)
            *next++ = (chat_tool_call){sm->tool_calls[k].name, sm->tool_calls[k].arguments};
    }
    chat_options co = {1, r->enable_thinking, r->preserve_thinking};
    chat_tools tools = {(const char *const *)r->out.tools,
                        r->out.tool_choice == GEN_TOOLS_NONE ? 0 : r->out.n_tools, calls, n_calls};
    if (st == NC_OK) st = chat_render_family(g->family, m, r->n_messages, &co, &tools, text, err);
    free(m);
    free(calls);
    free(n_calls);
    free(all);
    return st;
}

/* Context shift: drops the oldest exchange after the system prompt (a user
 * message and the messages that answer it, up to the next user message);
 * the last message always stays. Returns how many went (0: none can). */
static size_t drop_oldest_turn(serve_request *r) {
    size_t keep = r->n_messages && !strcmp(r->messages[0].role, "system") ? 1 : 0;
    if (r->n_messages < keep + 2) return 0;
    size_t k = 1;
    while (keep + k < r->n_messages - 1 && strcmp(r->messages[keep + k].role, "user"))
        k++;
    serve_request_drop_messages(r, keep, k);
    return k;
}

/* Renders (chat) and tokenizes the prompt, sizes max_tokens. On failure
 * returns the HTTP status to answer with and fills msg/param/code. */
static int prepare_job(serve_server *s, serve_gen *g, serve_job *j, char *msg, size_t msg_cap,
                       char *param_buf, size_t param_cap, const char **param, const char **code) {
    serve_request *r = &j->req;
    char *text = NULL;
    nc_error err;
    *param = NULL;
    *code = NULL;
    if (gen_out_constraint_new(&r->out, g->family, g->vocab, &j->constraint, param, &err) !=
        NC_OK) {
        snprintf(msg, msg_cap, "%s", err.msg);
        return 400;
    }
    /* Constrained output starts at once: the answer, not a think block. */
    if (j->constraint) r->enable_thinking = 0;
    if (r->endpoint == SERVE_EP_CHAT && !s->opt.parse_special_in_content &&
        check_special(g, r, msg, msg_cap, param_buf, param_cap)) {
        *param = param_buf;
        *code = "special_token_in_content";
        return 400;
    }
    if (r->endpoint == SERVE_EP_CHAT) {
        nc_status st = render_chat(g, r, &text, &err);
        if (st != NC_OK) {
            *param = "messages";
            snprintf(msg, msg_cap, "%s", err.msg);
            return st == NC_ERR_NOMEM ? 500 : 400;
        }
        j->split_reasoning = 1;
        j->starts_in_reasoning = ends_with_open_think(g->m->e->family, text);
    } else if (r->prompt) {
        text = strdup(r->prompt);
        if (!text) return snprintf(msg, msg_cap, "out of memory"), 500;
    }
    size_t n = 0;
    nc_status st = NC_OK;
    const char *what = r->endpoint == SERVE_EP_CHAT ? "messages" : "prompt";
    int ctx = serve_sched_ctx(g->sched);
    /* No token is longer than the vocabulary's longest entry, so text above
     * ctx times that length cannot fit: refused before tokenizing, which
     * costs several times the text in memory and time. */
    size_t max_text = (size_t)ctx * g->max_token_bytes;
    if (text && strlen(text) > max_text) {
        size_t len = strlen(text);
        free(text);
        *param = what;
        *code = "context_length_exceeded";
        snprintf(msg, msg_cap,
                 "the prompt has %zu bytes; the context holds %d tokens of at most %zu bytes each",
                 len, ctx, g->max_token_bytes);
        return 400;
    }
    if (text) {
        st = tok_encode(g->m->tok, text, strlen(text), &j->prompt, &n, &err);
        free(text);
    } else { /* token ids given: they must name rows of the model */
        for (size_t i = 0; i < r->n_prompt_ids; i++)
            if (r->prompt_ids[i] >= g->m->e->n_vocab) {
                *param = what;
                snprintf(msg, msg_cap, "'prompt[%zu]': token id %d is outside the vocabulary (%d)",
                         i, (int)r->prompt_ids[i], g->m->e->n_vocab);
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
    if (n == 0) {
        *param = what;
        snprintf(msg, msg_cap, "'%s' is empty: there is nothing to continue", what);
        return 400;
    }
    /* Context shift (as llama.cpp's, and `nectar chat`'s): while the
     * conversation leaves a reply less than min(max_tokens, ctx/2) tokens,
     * its oldest turn after the system prompt goes (X-Context-Shift says
     * how many messages) */
    int shift = r->context_shift >= 0 ? r->context_shift : s->opt.context_shift;
    int want = r->max_tokens < 0 || r->max_tokens > ctx / 2 ? ctx / 2 : r->max_tokens;
    while (shift && r->endpoint == SERVE_EP_CHAT && ctx - (int)n < want) {
        size_t k = drop_oldest_turn(r);
        if (!k) break;
        j->n_shifted += (int)k;
        free(j->prompt);
        j->prompt = NULL;
        st = render_chat(g, r, &text, &err);
        if (st == NC_OK) {
            st = tok_encode(g->m->tok, text, strlen(text), &j->prompt, &n, &err);
            free(text);
        }
        if (st != NC_OK) {
            *param = what;
            snprintf(msg, msg_cap, "%s", err.msg);
            return st == NC_ERR_NOMEM ? 500 : 400;
        }
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
    serve_gen *g; /* the generator running the job */
    serve_job *job;
    int fd;
    serve_resp_id rid;
    serve_text out;
    size_t out_off;
    size_t sent_reasoning, sent_content, sent_lp;
    unsigned seen;
    int sent_first, is_finished;
    int uses_tools; /* content goes through the tool-call scanner */
    gen_tool_scan scan;
} stream_ctx;

/* Tool calls are parsed from the output when the request gave tools and
 * did not switch them off. */
static int uses_tools(const serve_request *r) {
    return gen_output_spec_uses_tools(&r->out);
}

/* A scanner for the server's call format, typing by the request's tools. */
static gen_tool_scan tool_scan_for(const serve_gen *g, const serve_request *r) {
    return (gen_tool_scan){0, 0, g->family, (const char *const *)r->out.tools, r->out.n_tools};
}

/* finish_reason as OpenAI reports it: "tool_calls" when the model stopped
 * after calling. */
static const char *finish_of(const serve_job *j, int n_calls) {
    const char *f = j->finish_reason ? j->finish_reason : "stop";
    return n_calls > 0 && !strcmp(f, "stop") ? "tool_calls" : f;
}

static void append_chunk(stream_ctx *sc, const serve_delta *d) {
    char *ev = serve_chunk(&sc->rid, d, 0, NULL);
    if (ev) serve_text_append(&sc->out, ev, strlen(ev));
    free(ev);
}

/* The scanner's news as chunks: text as content; each call as OpenAI
 * streams one, a delta with its id, type and name (arguments "") and then
 * one with the arguments. */
static void stream_tool_news(stream_ctx *sc, int is_final) {
    serve_job *j = sc->job;
    gen_tool_news news;
    int index = sc->scan.n_calls;
    while (gen_tool_scan_next(&sc->scan, j->content.p ? j->content.p : "", j->content.len, is_final,
                              &news)) {
        if (news.text_len) {
            serve_delta d = {0};
            d.content = news.text;
            d.content_len = news.text_len;
            append_chunk(sc, &d);
        }
        json_t *call;
        size_t i;
        json_array_foreach(news.calls, i, call) {
            json_t *f = json_object_get(call, "function");
            json_t *head = json_pack("[{s:O,s:O,s:{s:O,s:s}}]", "id", json_object_get(call, "id"),
                                     "type", json_object_get(call, "type"), "function", "name",
                                     json_object_get(f, "name"), "arguments", "");
            json_t *args =
                json_pack("[{s:{s:O}}]", "function", "arguments", json_object_get(f, "arguments"));
            serve_delta d = {0};
            d.first_call_index = index;
            d.tool_calls = head;
            append_chunk(sc, &d);
            d.tool_calls = args;
            append_chunk(sc, &d);
            json_decref(head);
            json_decref(args);
            index++;
        }
        json_decref(news.calls);
    }
    json_decref(news.calls);
}

/* Appends SSE events for everything new in the job; sets is_finished after
 * the closing events. Called with j->mu held. */
static void stream_collect(stream_ctx *sc) {
    serve_job *j = sc->job;
    serve_delta d = {0};
    d.reasoning = j->reasoning.p ? j->reasoning.p + sc->sent_reasoning : NULL;
    d.reasoning_len = j->reasoning.len - sc->sent_reasoning;
    if (!sc->uses_tools) {
        d.content = j->content.p ? j->content.p + sc->sent_content : NULL;
        d.content_len = j->content.len - sc->sent_content;
    }
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
    if (sc->uses_tools) stream_tool_news(sc, j->state == SERVE_JOB_DONE);
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
        ev = serve_chunk(&sc->rid, NULL, 0, finish_of(j, sc->scan.n_calls));
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
        int w = wait_job(sc->job, &sc->seen, sc->fd, 0, nc_now_s() + SERVE_SSE_PING_S);
        if (w == 1) {
            serve_sched_cancel(sc->g->sched, sc->job);
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
    if (!done) serve_sched_cancel(sc->g->sched, sc->job);
    serve_job_release(sc->job);
    free(sc->out.p);
    free(sc);
}

static enum MHD_Result start_stream(serve_server *s, serve_gen *g, struct MHD_Connection *c,
                                    conn_ctx *cc, serve_job *j, const serve_resp_id *rid,
                                    unsigned seen) {
    stream_ctx *sc = calloc(1, sizeof *sc);
    if (!sc) return send_error(c, cc, 500, "out of memory", NULL, NULL);
    sc->s = s;
    sc->g = g;
    sc->job = j; /* takes the connection's reference */
    sc->fd = client_fd(c);
    sc->rid = *rid;
    sc->seen = seen;
    sc->uses_tools = uses_tools(&j->req);
    sc->scan = tool_scan_for(g, &j->req);
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, sc, stream_free);
    if (!r) {
        stream_free(sc);
        return MHD_NO;
    }
    add_common_headers(r, cc, "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    cc->status = 200;
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* The tree jansson would build for the body, bounded and paid for before
 * it is: 1 with *cost taken from the budget (give it back with parsed()),
 * or 0 with the refusal queued in *ret. */
static int admit_parse(serve_server *s, struct MHD_Connection *c, conn_ctx *cc, size_t *cost,
                       enum MHD_Result *ret) {
    serve_json_shape shape;
    serve_json_shape_of(cc->body.p ? cc->body.p : "", cc->body.len, &shape);
    char why[200];
    if (shape.n_values > SERVE_MAX_JSON_VALUES) {
        snprintf(why, sizeof why, "the request body holds %zu JSON values; at most %d are taken",
                 shape.n_values, SERVE_MAX_JSON_VALUES);
        return *ret = send_error(c, cc, 413, why, NULL, "too_many_values"), 0;
    }
    if (shape.max_depth > SERVE_MAX_JSON_DEPTH) {
        snprintf(why, sizeof why, "the request body nests %d levels deep; at most %d are taken",
                 shape.max_depth, SERVE_MAX_JSON_DEPTH);
        return *ret = send_error(c, cc, 400, why, NULL, "too_deep"), 0;
    }
    *cost = serve_json_parse_cost(&shape);
    if (mem_take(s, *cost) != 0)
        return *ret = send_error(c, cc, 503,
                                 "the server is parsing too much request data at once; retry "
                                 "later",
                                 NULL, "server_busy"),
               0;
    return 1;
}

/* After the parse: the body and the budget it held go back. */
static void parsed(serve_server *s, conn_ctx *cc, size_t cost) {
    free(cc->body.p);
    memset(&cc->body, 0, sizeof cc->body);
    mem_give(s, cost + cc->reserved);
    trim_after(cost + cc->reserved);
    cc->reserved = 0;
}

/* The generator a request's model names: by id, -m path or alias, then
 * any OpenAI name (or none) means the first; NULL when none fits. */
static serve_gen *gen_named(serve_server *s, const char *asked) {
    if (!s->n_gens) return NULL;
    if (!asked) return &s->gens[0];
    for (int k = 0; k < s->n_gens; k++) {
        serve_gen *g = &s->gens[k];
        if (serve_model_matches(asked, g->m->model_id, g->path, g->aliases, g->n_aliases) &&
            !serve_model_matches(asked, "", NULL, NULL, 0))
            return g;
    }
    return serve_model_matches(asked, "", NULL, NULL, 0) ? &s->gens[0] : NULL;
}

static enum MHD_Result handle_completion(serve_server *s, struct MHD_Connection *c, conn_ctx *cc,
                                         serve_endpoint ep) {
    serve_request req;
    serve_parse_error perr;
    nc_error err = {0};
    size_t cost;
    enum MHD_Result refused;
    if (!admit_parse(s, c, cc, &cost, &refused)) return refused;
    nc_status st =
        serve_request_parse(cc->body.p ? cc->body.p : "", cc->body.len, ep, &req, &perr, &err);
    parsed(s, cc, cost); /* the bytes are not needed while the request runs */
    if (st != NC_OK)
        return send_error(c, cc, 400, err.msg, perr.param,
                          st == NC_ERR_FORMAT ? "invalid_json" : "invalid_value");
    if (!s->n_gens) {
        serve_request_free(&req);
        return send_error(c, cc, 404, "this server hosts encoders only: no text generator", "model",
                          "model_not_found");
    }
    serve_gen *g = gen_named(s, req.model);
    if (!g) {
        char msg[512];
        int n =
            snprintf(msg, sizeof msg, "model '%.200s' does not exist; this server has ", req.model);
        for (int i = 0; i < s->n_gens && n > 0 && (size_t)n < sizeof msg; i++)
            n += snprintf(msg + n, sizeof msg - (size_t)n, "%s'%.100s'", i ? ", " : "",
                          s->gens[i].m->model_id);
        serve_request_free(&req);
        return send_error(c, cc, 404, msg, "model", "model_not_found");
    }
    serve_job *j = serve_job_new(&req);
    if (j) {
        atomic_fetch_add(&s->n_inflight, 1);
        cc->holds_inflight = 1;
    }
    if (!j) {
        serve_request_free(&req);
        return send_error(c, cc, 500, "out of memory", NULL, NULL);
    }
    j->t_submit = cc->t_start;
    char msg[512], param_buf[64];
    const char *param, *code;
    int status = prepare_job(s, g, j, msg, sizeof msg, param_buf, sizeof param_buf, &param, &code);
    if (status != 200) {
        serve_job_release(j);
        return send_error(c, cc, status, msg, param, code ? code : "invalid_value");
    }
    cc->n_shifted = j->n_shifted;
    if (serve_sched_submit(g->sched, j, &err) != NC_OK) {
        serve_job_release(j);
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
        /* The deadline is checked here too: wait_job returns early on every
         * change to the job, and a queued job can change without leaving
         * the queue, which would keep it waiting past --timeout. */
        int w = nc_now_s() > deadline ? 2 : wait_job(j, &seen, fd, j->req.stream, deadline);
        if (w != 0) {
            serve_sched_cancel(g->sched, j);
            serve_job_release(j);
            if (w == 1) return MHD_NO; /* nobody to answer */
            return send_error(c, cc, 504, "timed out waiting for a free slot", NULL, "timeout");
        }
    }
    serve_resp_id rid;
    make_id(s, ep, rid.id, sizeof rid.id);
    rid.created = (long long)time(NULL);
    rid.model = g->m->model_id;
    rid.endpoint = ep;
    if (j->req.stream) return start_stream(s, g, c, cc, j, &rid, 0);
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int done = j->state == SERVE_JOB_DONE;
        pthread_mutex_unlock(&j->mu);
        if (done) break;
        if (wait_job(j, &seen, fd, 0, 0) == 1) {
            serve_sched_cancel(g->sched, j);
            serve_job_release(j);
            return MHD_NO;
        }
    }
    enum MHD_Result ret;
    if (j->status != NC_OK) {
        int is_shutdown = j->finish_reason && !strcmp(j->finish_reason, "cancelled");
        ret = send_error(c, cc, is_shutdown ? 503 : 500, j->error, NULL,
                         is_shutdown ? "shutting_down" : NULL);
    } else {
        serve_delta d = {j->reasoning.p,
                         j->reasoning.len,
                         j->content.p,
                         j->content.len,
                         j->req.logprobs ? j->logprobs : NULL,
                         NULL,
                         0};
        serve_usage u;
        job_usage(j, &u);
        serve_text text = {0};
        gen_tool_scan scan = tool_scan_for(g, &j->req);
        if (uses_tools(&j->req)) { /* the text around the calls, and the calls */
            gen_tool_news news;
            d.tool_calls = json_array();
            while (gen_tool_scan_next(&scan, j->content.p ? j->content.p : "", j->content.len, 1,
                                      &news)) {
                serve_text_append(&text, news.text ? news.text : "", news.text_len);
                json_array_extend(d.tool_calls, news.calls);
                json_decref(news.calls);
            }
            json_decref(news.calls);
            d.content = text.p ? text.p : "";
            d.content_len = text.len;
        }
        ret = send_body(c, cc, 200, "application/json",
                        serve_response_full(&rid, &d, finish_of(j, scan.n_calls), &u), NULL);
        json_decref(d.tool_calls);
        free(text.p);
    }
    serve_job_release(j);
    return ret;
}

/* ---- other routes ----------------------------------------------------------- */

static json_t *model_json(serve_server *s, serve_gen *g, const char *name) {
    return json_pack("{s:s,s:s,s:I,s:s,s:{s:i,s:i,s:s}}", "id", name, "object", "model", "created",
                     (json_int_t)s->started, "owned_by", "nectar", "meta", "n_vocab",
                     g->m->e->n_vocab, "n_ctx", serve_sched_ctx(g->sched), "engine", g->m->e->kind);
}

static char *dump_json(json_t *o) {
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return t;
}

static enum MHD_Result handle_models(serve_server *s, struct MHD_Connection *c, conn_ctx *cc,
                                     const char *url) {
    const char *name = !strncmp(url, "/v1/models/", 11) ? url + 11 : NULL;
    json_t *enc = name && *name ? serve_encoders_model(s->opt.encoders, name, s->started) : NULL;
    if (enc) return send_body(c, cc, 200, "application/json", dump_json(enc), NULL);
    if (name && *name) {
        serve_gen *g = gen_named(s, name);
        if (!g) return send_error(c, cc, 404, "no such model", "model", "model_not_found");
        return send_body(c, cc, 200, "application/json", dump_json(model_json(s, g, name)), NULL);
    }
    /* Each generator under its id, each --alias as a model of its own. */
    json_t *data = json_array();
    for (int k = 0; k < s->n_gens; k++) {
        serve_gen *g = &s->gens[k];
        json_array_append_new(data, model_json(s, g, g->m->model_id));
        for (int i = 0; i < g->n_aliases; i++)
            json_array_append_new(data, model_json(s, g, g->aliases[i]));
    }
    serve_encoders_list(s->opt.encoders, data, s->started);
    return send_body(c, cc, 200, "application/json",
                     dump_json(json_pack("{s:s,s:o}", "object", "list", "data", data)), NULL);
}

static enum MHD_Result dispatch(serve_server *s, struct MHD_Connection *c, conn_ctx *cc,
                                const char *url, const char *method) {
    int is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    int is_post = !strcmp(method, "POST");
    int has_key = s->opt.api_key != NULL;
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!serve_host_is_allowed(s->opt.host, has_key, host) ||
        !serve_origin_is_allowed(s->opt.host, has_key, origin))
        return send_error(c, cc, 403,
                          "this Host or Origin is not served: without --api-key the server "
                          "answers only loopback names and its --host address (DNS rebinding "
                          "guard)",
                          NULL, "forbidden_host");
    /* A keyed server lets any page call it (the page still needs the key);
     * a keyless one names the allowed origin back. */
    if (has_key)
        snprintf(cc->origin, sizeof cc->origin, "*");
    else if (origin)
        snprintf(cc->origin, sizeof cc->origin, "%s", origin);
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
    case SERVE_ROUTE_EMBEDDINGS:
    case SERVE_ROUTE_RERANK:
        if (is_post) {
            int status;
            size_t cost;
            enum MHD_Result refused;
            if (!admit_parse(s, c, cc, &cost, &refused)) return refused;
            char *b = serve_encoders_answer(s->opt.encoders, cc->route == SERVE_ROUTE_RERANK,
                                            cc->body.p ? cc->body.p : "", cc->body.len, &status);
            parsed(s, cc, cost);
            return send_body(c, cc, status, "application/json", b, NULL);
        }
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
        /* The gate checked Content-Length (one, decimal, within --max-body);
         * the buffer is sized to it once, rather than doubling past it. */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
        if (n > s->opt.max_body_bytes) {
            cc->is_rejected = 1;
            return send_error(c, cc, 413, "request body is larger than the limit (--max-body)",
                              NULL, "body_too_large");
        }
        if (n > 0 && mem_take(s, (size_t)n) != 0) {
            cc->is_rejected = 1;
            return send_error(c, cc, 503, "too much request data in flight; retry later", NULL,
                              "server_busy");
        }
        cc->reserved = cc->body_bytes = (size_t)n;
        if (n > 0) {
            cc->body.p = malloc((size_t)n + 1);
            if (!cc->body.p) {
                cc->is_rejected = 1;
                return send_error(c, cc, 503, "out of memory for the request body; retry later",
                                  NULL, "out_of_memory");
            }
            cc->body.cap = (size_t)n + 1;
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
    if (cc->holds_inflight) atomic_fetch_sub(&s->n_inflight, 1);
    double dt = nc_now_s() - cc->t_start;
    /* 499 (nginx's "client closed request"): nothing was answered, or the
     * answer could not be delivered (a stream whose client went away). */
    int status = cc->status;
    if (!status || (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && status < 400 &&
                    (cc->route == SERVE_ROUTE_CHAT || cc->route == SERVE_ROUTE_COMPLETIONS)))
        status = 499;
    serve_metrics_request(&s->metrics, cc->route, status, dt);
    nc_log(NC_LOG_DEBUG, "http: %s -> %d in %.1f ms%s", cc->what, status, 1000.0 * dt,
           toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
    free(cc->body.p);
    mem_give(s, cc->reserved);
    trim_after(cc->body_bytes); /* the request's copies of the body are gone too */
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

/* MHD announces each connection it takes and each that ends; the end is
 * passed on to the gate's counts. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    serve_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&s->n_started, 1);
        *socket_context = s;
        return;
    }
    if (!*socket_context) return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) serve_gate_closed(s->gate, ci->client_addr);
    *socket_context = NULL;
}

static int gate_handoff(void *cls, int fd, const struct sockaddr *addr, socklen_t addr_len) {
    serve_server *s = cls;
    /* Only the gate thread adds connections, so a STARTED seen during this
     * call is this connection's: then its end is reported by on_connection
     * even when the add fails; otherwise the gate undoes its count. */
    int before = atomic_load(&s->n_started);
    if (MHD_add_connection(s->d, fd, addr, addr_len) == MHD_YES) return 0;
    return atomic_load(&s->n_started) != before ? 0 : -1;
}

static void gate_rejected(void *cls, int status) {
    serve_server *s = cls;
    serve_metrics_request(&s->metrics, SERVE_ROUTE_CONNECTION, status, 0);
}

nc_status serve_server_start(gen_model *m, const serve_options *opt, serve_server **out,
                             nc_error *err) {
    *out = NULL;
    if (opt->port < 0 || opt->port > 65535)
        return nc_fail(err, NC_ERR_INVALID, "--port %d: must be between 0 and 65535", opt->port);
    if (opt->timeout_s <= 0) return nc_fail(err, NC_ERR_INVALID, "--timeout must be positive");
    if (!m && serve_encoders_count(opt->encoders) == 0)
        return nc_fail(err, NC_ERR_INVALID, "serve: no model to host");
    if (opt->n_more_models < 0 || opt->n_more_models >= SERVE_MAX_GENERATORS ||
        (!m && opt->n_more_models))
        return nc_fail(err, NC_ERR_INVALID, "serve: 1 to %d text generators, the first as m",
                       SERVE_MAX_GENERATORS);
    if (opt->api_key && !*opt->api_key)
        return nc_fail(err, NC_ERR_INVALID, "--api-key: the key is empty");
    if (opt->chat_template && chat_family_by_name(opt->chat_template) < 0)
        return nc_fail(err, NC_ERR_INVALID, "--chat-template %s: must be qwen3 or qwen3.5",
                       opt->chat_template);
    serve_server *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    s->opt = *opt;
    s->started = (long long)time(NULL);
    atomic_init(&s->id_counter, 1);
    atomic_init(&s->n_inflight, 0);
    atomic_init(&s->n_started, 0);
#ifdef __GLIBC__
    /* Bodies and their strings (megabytes each) get their own mappings,
     * returned to the system when freed. Left to itself glibc raises this
     * threshold after the first large free, and then serves them from
     * per-thread arenas whose free tops malloc_trim does not release: ten
     * 8 MB bodies left about 130 MB resident. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    atomic_init(&s->mem_used, 0);
    s->mem_budget = SERVE_PARSE_BUDGET_BYTES;
    if (s->mem_budget < 3 * opt->max_body_bytes) s->mem_budget = 3 * opt->max_body_bytes;
    int n_gens = m ? 1 + opt->n_more_models : 0;
    if (serve_metrics_init(&s->metrics, opt->n_parallel * n_gens) != 0) {
        free(s);
        return nc_fail(err, NC_ERR_INTERNAL, "serve: cannot create the metrics lock");
    }
    s->has_metrics = 1;
    nc_status st = NC_OK;
    for (int k = 0; st == NC_OK && k < n_gens; k++) {
        serve_gen *g = &s->gens[s->n_gens++];
        g->m = k ? opt->more_models[k - 1] : m;
        g->path = k ? opt->more_paths[k - 1] : opt->model_path;
        if (!k) {
            g->aliases = opt->aliases;
            g->n_aliases = opt->n_aliases;
        }
        g->family = opt->chat_template ? (chat_family)chat_family_by_name(opt->chat_template)
                                       : g->m->e->family->chat;
        serve_metrics_placement(&s->metrics, g->m->model_id, engine_placement(g->m->e));
        g->max_token_bytes = tok_max_token_bytes(g->m->tok);
        if (g->max_token_bytes == 0) g->max_token_bytes = 1;
        st = tm_vocab_new(g->m->tok, g->m->e->n_vocab, g->m->eos, g->m->n_eos, &g->vocab, err);
        if (st == NC_OK) st = serve_special_new(g->m->tok, &g->special, err);
        serve_sched_options so = {0};
        so.n_slots = opt->n_parallel;
        so.ctx = opt->ctx;
        so.queue_max = opt->queue_max;
        /* OpenAI's defaults where the model folder says nothing */
        so.defaults = gen_sampler_defaults_greedy();
        so.defaults.temperature = 1.0f;
        so.defaults.top_p = 1.0f;
        if (st == NC_OK && g->path) st = gen_sampling_from_folder(g->path, 0, &so.defaults, err);
        if (st == NC_OK) st = serve_sched_new(g->m, &so, &s->metrics, &g->sched, err);
    }
    if (st != NC_OK) {
        serve_server_stop(s);
        return st;
    }
    int max_conn = opt->max_connections > 0 ? opt->max_connections : 512;
    int per_ip = opt->max_per_ip > 0 ? opt->max_per_ip : max_conn / 2;
    if (per_ip < 1) per_ip = 1;
    /* The gate keeps MHD's own limits out of reach: heads are smaller than
     * its memory pool and connections fewer than its limit, so MHD never
     * answers with its HTML error pages or drops a connection silently. */
    s->d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
        0, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)opt->timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)max_conn + 16, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_MHD_POOL_BYTES,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        s, MHD_OPTION_END);
    if (!s->d) {
        serve_server_stop(s);
        return nc_fail(err, NC_ERR_INTERNAL, "serve: cannot start the HTTP daemon");
    }
    serve_gate_options go = {opt->host,
                             opt->port,
                             max_conn,
                             per_ip,
                             opt->header_timeout_s > 0 ? opt->header_timeout_s : 10.0,
                             {SERVE_MAX_LINE_BYTES, SERVE_MAX_HEAD_BYTES, opt->max_body_bytes}};
    serve_gate_hooks gh = {s, gate_handoff, gate_rejected};
    st = serve_gate_start(&go, &gh, &s->gate, err);
    if (st != NC_OK) {
        serve_server_stop(s);
        return st;
    }
    s->port = serve_gate_port(s->gate);
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
    serve_gate_stop(s->gate); /* no new connections */
    for (int k = 0; k < s->n_gens; k++)
        serve_sched_stop(s->gens[k].sched);
    /* A moment for the connections to send their last words (the error
     * event and [DONE], or a 503) before the daemon closes their sockets. */
    for (int i = 0; i < 100 && atomic_load(&s->n_inflight) > 0; i++) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (s->d) MHD_stop_daemon(s->d);
    serve_gate_free(s->gate);
    for (int k = 0; k < s->n_gens; k++) {
        serve_sched_free(s->gens[k].sched);
        tm_vocab_free(s->gens[k].vocab);
        serve_special_free(s->gens[k].special);
    }
    if (s->has_metrics) serve_metrics_destroy(&s->metrics);
    free(s);
}
