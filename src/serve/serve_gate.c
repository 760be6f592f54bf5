/* The gate thread (see serve_gate.h): poll() over the listening socket and
 * the connections whose request head is still arriving. Heads are read with
 * MSG_PEEK, so the bytes stay in the socket for the HTTP library that takes
 * the connection over; an answer from the gate is written straight to the
 * socket, followed by a short drain so the client reads it instead of a
 * reset. Counts (total, per address) cover pending and handed-off
 * connections; the library reports the end of the latter. */
#include "serve/serve_gate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/timer.h"
#include "serve/serve_respond.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* macOS: SIGPIPE is ignored by `nectar serve` instead */
#endif

/* Answered connections kept open to drain, and for how long: long enough for
 * the client to read the error, short enough that they cannot pile up. */
#define GATE_MAX_DRAINING 64
#define GATE_DRAIN_S 1.0
#define GATE_ACCEPTS_PER_WAKE 64
/* A partial head stays readable (peeked bytes are not consumed), so poll
 * cannot say when more arrives: such entries are looked at again this
 * often, and watched only for the client closing (POLLRDHUP, Linux; other
 * systems let an abandoned partial head run into the header deadline). */
#define GATE_RECHECK_S 0.01
#ifdef POLLRDHUP
#define GATE_POLL_CLOSED POLLRDHUP
#else
#define GATE_POLL_CLOSED 0
#endif

typedef struct addr_key {
    unsigned char b[17]; /* family tag, then the address */
} addr_key;

typedef struct ip_count {
    addr_key k;
    int n;
} ip_count;

typedef struct pending {
    int fd;
    addr_key k;
    struct sockaddr_storage sa;
    socklen_t sa_len;
    double deadline;
    double recheck;  /* partial head: when to peek again */
    size_t seen;     /* bytes peeked last time */
    int is_draining; /* answered; waiting for EOF or the deadline */
} pending;

struct serve_gate {
    serve_gate_options opt;
    serve_gate_hooks hooks;
    int listen_fd, port;
    int wake[2];
    pthread_t thread;
    int has_thread;
    atomic_int stop;
    pthread_mutex_t mu; /* guards ips, n_ips, n_active */
    ip_count *ips;
    int n_ips, n_active;
    pending *pend; /* gate thread only */
    int n_pend, cap_pend;
    char *peek;
    struct pollfd *pfd;
};

static addr_key key_of(const struct sockaddr *a) {
    addr_key k;
    memset(&k, 0, sizeof k);
    if (a->sa_family == AF_INET) {
        k.b[0] = 4;
        memcpy(k.b + 1, &((const struct sockaddr_in *)a)->sin_addr, 4);
    } else if (a->sa_family == AF_INET6) {
        k.b[0] = 6;
        memcpy(k.b + 1, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
    }
    return k;
}

/* Per-address count change under mu; returns the new count. */
static int ip_add(serve_gate *g, const addr_key *k, int delta) {
    for (int i = 0; i < g->n_ips; i++)
        if (!memcmp(g->ips[i].k.b, k->b, sizeof k->b)) {
            g->ips[i].n += delta;
            int n = g->ips[i].n;
            if (n <= 0) g->ips[i] = g->ips[--g->n_ips];
            return n;
        }
    if (delta <= 0 || g->n_ips >= g->opt.max_connections + GATE_MAX_DRAINING) return 0;
    g->ips[g->n_ips].k = *k;
    g->ips[g->n_ips++].n = delta;
    return delta;
}

static int ip_get(serve_gate *g, const addr_key *k) {
    for (int i = 0; i < g->n_ips; i++)
        if (!memcmp(g->ips[i].k.b, k->b, sizeof k->b)) return g->ips[i].n;
    return 0;
}

static int n_heads(const serve_gate *g) {
    int n = 0;
    for (int i = 0; i < g->n_pend; i++)
        n += !g->pend[i].is_draining;
    return n;
}

static int n_draining(const serve_gate *g) {
    return g->n_pend - n_heads(g);
}

static const char *reason(int status) {
    switch (status) {
    case 408:
        return "Request Timeout";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Bad Request";
    }
}

/* Writes a complete JSON error response and half-closes; the socket is
 * non-blocking and the answer small, so this never waits. */
static void answer(serve_gate *g, int fd, int status, const char *code, const char *msg) {
    char *body = serve_error_body(status, msg, NULL, code);
    char head[256];
    size_t n_body = body ? strlen(body) : 0;
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
                     "%zu\r\nConnection: close\r\n%s\r\n",
                     status, reason(status), n_body, status == 503 ? "Retry-After: 1\r\n" : "");
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) == n && body)
        (void)!send(fd, body, n_body, MSG_NOSIGNAL);
    free(body);
    shutdown(fd, SHUT_WR);
    if (g->hooks.rejected) g->hooks.rejected(g->hooks.cls, status);
}

/* Ends pending entry i: its fd is closed unless handed off (fd < 0). */
static void pend_remove(serve_gate *g, int i) {
    pending *p = &g->pend[i];
    if (p->fd >= 0) close(p->fd);
    g->pend[i] = g->pend[--g->n_pend];
}

/* An answered head: stop counting it, keep the socket a moment to drain. */
static void pend_answer(serve_gate *g, int i, int status, const char *code, const char *msg) {
    pending *p = &g->pend[i];
    answer(g, p->fd, status, code, msg);
    pthread_mutex_lock(&g->mu);
    ip_add(g, &p->k, -1);
    pthread_mutex_unlock(&g->mu);
    if (n_draining(g) >= GATE_MAX_DRAINING) {
        pend_remove(g, i);
        return;
    }
    p->is_draining = 1;
    p->deadline = nc_now_s() + GATE_DRAIN_S;
}

static void accept_some(serve_gate *g) {
    for (int a = 0; a < GATE_ACCEPTS_PER_WAKE; a++) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept(g->listen_fd, (struct sockaddr *)&sa, &sl);
        if (fd < 0) return; /* EAGAIN, or a transient error (EMFILE): try at the next wake */
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        addr_key k = key_of((struct sockaddr *)&sa);
        pthread_mutex_lock(&g->mu);
        int total = g->n_active + n_heads(g);
        int is_full = total >= g->opt.max_connections;
        int is_ip_full = ip_get(g, &k) >= g->opt.max_per_ip;
        if (!is_full && !is_ip_full) ip_add(g, &k, 1);
        pthread_mutex_unlock(&g->mu);
        if (is_full || is_ip_full || g->n_pend >= g->cap_pend) {
            answer(g, fd, 503, "too_many_connections",
                   is_ip_full && !is_full
                       ? "too many connections from this address; retry later"
                       : "the server has too many open connections; retry later");
            if (n_draining(g) >= GATE_MAX_DRAINING || g->n_pend >= g->cap_pend) {
                close(fd);
                continue;
            }
            pending *p = &g->pend[g->n_pend++];
            memset(p, 0, sizeof *p);
            p->fd = fd;
            p->is_draining = 1;
            p->deadline = nc_now_s() + GATE_DRAIN_S;
            continue;
        }
        pending *p = &g->pend[g->n_pend++];
        memset(p, 0, sizeof *p);
        p->fd = fd;
        p->k = k;
        memcpy(&p->sa, &sa, sizeof sa);
        p->sa_len = sl;
        p->deadline = nc_now_s() + g->opt.header_timeout_s;
    }
}

/* Entry i has bytes (or EOF, or is due for a recheck): judge the head so
 * far. revents: what poll reported for it. */
static void read_head(serve_gate *g, int i, short revents) {
    pending *p = &g->pend[i];
    if (p->is_draining) {
        char sink[4096];
        ssize_t r = recv(p->fd, sink, sizeof sink, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            pend_remove(g, i);
        return;
    }
    ssize_t r = recv(p->fd, g->peek, g->opt.head.max_head_bytes, MSG_PEEK);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (r <= 0) { /* gone before sending anything (or an error): nothing to answer */
        pthread_mutex_lock(&g->mu);
        ip_add(g, &p->k, -1);
        pthread_mutex_unlock(&g->mu);
        pend_remove(g, i);
        return;
    }
    int is_eof = (revents & (GATE_POLL_CLOSED | POLLHUP | POLLERR)) != 0;
    p->recheck = nc_now_s() + GATE_RECHECK_S;
    if ((size_t)r == p->seen && !is_eof) return;
    p->seen = (size_t)r;
    serve_head_verdict v;
    serve_head_check(g->peek, (size_t)r, is_eof, &g->opt.head, &v);
    if (v.status == 0) return;
    if (v.status != 200) {
        pend_answer(g, i, v.status, v.code, v.msg);
        return;
    }
    /* The ignored empty line is read away, so the HTTP library, which
     * would refuse it, sees the request line first. */
    char skipped[2];
    if (v.skip && recv(p->fd, skipped, v.skip, 0) != (ssize_t)v.skip) {
        pend_answer(g, i, 400, "bad_request", "the request head could not be read");
        return;
    }
    int fd = p->fd;
    addr_key k = p->k;
    struct sockaddr_storage sa = p->sa;
    socklen_t sl = p->sa_len;
    p->fd = -1;
    pend_remove(g, i);
    pthread_mutex_lock(&g->mu);
    g->n_active++;
    pthread_mutex_unlock(&g->mu);
    if (g->hooks.handoff(g->hooks.cls, fd, (struct sockaddr *)&sa, sl) != 0) {
        pthread_mutex_lock(&g->mu);
        g->n_active--;
        ip_add(g, &k, -1);
        pthread_mutex_unlock(&g->mu);
    }
}

static void expire(serve_gate *g, double now) {
    for (int i = 0; i < g->n_pend;) {
        pending *p = &g->pend[i];
        if (p->deadline > now) {
            i++;
            continue;
        }
        if (p->is_draining) {
            pend_remove(g, i);
            continue;
        }
        /* Entry i is now draining (deadline ahead) or another entry moved
         * into its place: either way it is looked at again. */
        pend_answer(g, i, 408, "timeout",
                    "the request head did not arrive in time (--header-timeout)");
    }
}

static void *gate_main(void *arg) {
    serve_gate *g = arg;
    while (!atomic_load(&g->stop)) {
        double now = nc_now_s();
        expire(g, now);
        double next = now + 1.0;
        int n = 0;
        g->pfd[n++] = (struct pollfd){g->wake[0], POLLIN, 0};
        g->pfd[n++] = (struct pollfd){g->listen_fd, POLLIN, 0};
        for (int i = 0; i < g->n_pend; i++) {
            pending *p = &g->pend[i];
            int is_partial = p->seen > 0 && !p->is_draining;
            if (p->deadline < next) next = p->deadline;
            if (is_partial && p->recheck < next) next = p->recheck;
            g->pfd[n++] = (struct pollfd){p->fd, is_partial ? GATE_POLL_CLOSED : POLLIN, 0};
        }
        int wait_ms = (int)((next - now) * 1000.0) + 1;
        if (poll(g->pfd, (nfds_t)n, wait_ms) < 0) continue;
        if (g->pfd[0].revents) break;
        /* Entries first (their poll slots match the array as it was), from
         * the end so a removal does not disturb the ones still to visit. */
        now = nc_now_s();
        for (int i = g->n_pend - 1; i >= 0; i--) {
            pending *p = &g->pend[i];
            short ev = g->pfd[2 + i].revents;
            if (ev || (p->seen > 0 && !p->is_draining && now >= p->recheck)) read_head(g, i, ev);
        }
        if (g->pfd[1].revents) accept_some(g);
    }
    return NULL;
}

static nc_status listen_on(serve_gate *g, nc_error *err) {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    struct sockaddr *addr;
    socklen_t len;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, g->opt.host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)g->opt.port);
        addr = (struct sockaddr *)&a4;
        len = sizeof a4;
    } else if (inet_pton(AF_INET6, g->opt.host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)g->opt.port);
        addr = (struct sockaddr *)&a6;
        len = sizeof a6;
    } else {
        return nc_fail(err, NC_ERR_INVALID, "--host '%s': not a numeric IPv4 or IPv6 address",
                       g->opt.host);
    }
    g->listen_fd = socket(addr->sa_family, SOCK_STREAM, 0);
    if (g->listen_fd < 0) return nc_fail(err, NC_ERR_IO, "serve: socket: %s", strerror(errno));
    int one = 1;
    setsockopt(g->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6)
        setsockopt(g->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(g->listen_fd, addr, len) != 0 || listen(g->listen_fd, 512) != 0)
        return nc_fail(err, NC_ERR_IO, "serve: cannot listen on %s:%d: %s", g->opt.host,
                       g->opt.port, strerror(errno));
    fcntl(g->listen_fd, F_SETFL, fcntl(g->listen_fd, F_GETFL, 0) | O_NONBLOCK);
    fcntl(g->listen_fd, F_SETFD, FD_CLOEXEC);
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    getsockname(g->listen_fd, (struct sockaddr *)&got, &gl);
    g->port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                              : ((struct sockaddr_in *)&got)->sin_port);
    return NC_OK;
}

nc_status serve_gate_start(const serve_gate_options *opt, const serve_gate_hooks *hooks,
                           serve_gate **out, nc_error *err) {
    *out = NULL;
    if (opt->max_connections < 1 || opt->max_per_ip < 1 || opt->header_timeout_s <= 0)
        return nc_fail(err, NC_ERR_INVALID, "serve: connection limits must be positive");
    serve_gate *g = calloc(1, sizeof *g);
    if (!g) return nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    g->opt = *opt;
    g->hooks = *hooks;
    g->listen_fd = g->wake[0] = g->wake[1] = -1;
    atomic_init(&g->stop, 0);
    g->cap_pend = opt->max_connections + GATE_MAX_DRAINING;
    g->ips = calloc((size_t)g->cap_pend, sizeof *g->ips);
    g->pend = calloc((size_t)g->cap_pend, sizeof *g->pend);
    g->pfd = calloc((size_t)g->cap_pend + 2, sizeof *g->pfd);
    g->peek = malloc(opt->head.max_head_bytes);
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g->ips);
        free(g->pend);
        free(g->pfd);
        free(g->peek);
        free(g);
        return nc_fail(err, NC_ERR_INTERNAL, "serve: cannot create the gate lock");
    }
    nc_status st = NC_OK;
    if (!g->ips || !g->pend || !g->pfd || !g->peek)
        st = nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    else if (pipe(g->wake) != 0)
        st = nc_fail(err, NC_ERR_IO, "serve: pipe: %s", strerror(errno));
    else
        st = listen_on(g, err);
    if (st == NC_OK && pthread_create(&g->thread, NULL, gate_main, g) != 0)
        st = nc_fail(err, NC_ERR_INTERNAL, "serve: cannot start the accept thread");
    if (st != NC_OK) {
        serve_gate_free(g);
        return st;
    }
    g->has_thread = 1;
    *out = g;
    return NC_OK;
}

int serve_gate_port(const serve_gate *g) {
    return g->port;
}

void serve_gate_closed(serve_gate *g, const struct sockaddr *addr) {
    addr_key k = key_of(addr);
    pthread_mutex_lock(&g->mu);
    g->n_active--;
    ip_add(g, &k, -1);
    pthread_mutex_unlock(&g->mu);
}

void serve_gate_stop(serve_gate *g) {
    if (!g) return;
    if (g->has_thread) {
        atomic_store(&g->stop, 1);
        (void)!write(g->wake[1], "x", 1);
        pthread_join(g->thread, NULL);
        g->has_thread = 0;
    }
    while (g->n_pend > 0)
        pend_remove(g, g->n_pend - 1);
    if (g->listen_fd >= 0) close(g->listen_fd);
    g->listen_fd = -1;
}

void serve_gate_free(serve_gate *g) {
    if (!g) return;
    serve_gate_stop(g);
    if (g->wake[0] >= 0) close(g->wake[0]);
    if (g->wake[1] >= 0) close(g->wake[1]);
    pthread_mutex_destroy(&g->mu);
    free(g->ips);
    free(g->pend);
    free(g->pfd);
    free(g->peek);
    free(g);
}
