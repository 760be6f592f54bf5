/* The server's front door: one thread owns the listening socket and every
 * connection until its request head has arrived. It enforces the connection
 * limits (total and per client address: a JSON 503 with Retry-After beyond
 * them), the header deadline (408), and the head checks of serve_head.c
 * (JSON 400/411/413/414/431/505), then hands the connection to the HTTP
 * library. Idle and slow-header clients therefore cost a poll entry here,
 * never a connection thread. */
#ifndef NC_SERVE_GATE_H
#define NC_SERVE_GATE_H

#include <sys/socket.h>

#include "base/error.h"
#include "serve/serve_head.h"

typedef struct serve_gate_options {
    const char *host; /* numeric IPv4 or IPv6 address */
    int port;         /* 0: any free one */
    int max_connections;
    int max_per_ip;
    double header_timeout_s;
    serve_head_limits head;
} serve_gate_options;

typedef struct serve_gate_hooks {
    void *cls;
    /* Takes a connection whose head was accepted; the fd is blocking. The
     * callee owns the fd afterwards (it closes it on failure too). Returns 0
     * on success. */
    int (*handoff)(void *cls, int fd, const struct sockaddr *addr, socklen_t addr_len);
    /* A connection answered by the gate itself with this status. */
    void (*rejected)(void *cls, int status);
} serve_gate_hooks;

typedef struct serve_gate serve_gate;

/* Binds, listens and starts the gate thread. */
nc_status serve_gate_start(const serve_gate_options *opt, const serve_gate_hooks *hooks,
                           serve_gate **out, nc_error *err);
int serve_gate_port(const serve_gate *g);
/* A handed-off connection from addr has closed (called from any thread). */
void serve_gate_closed(serve_gate *g, const struct sockaddr *addr);
/* Stops accepting and closes the connections not yet handed off; counts
 * of handed-off connections may still be reported until serve_gate_free. */
void serve_gate_stop(serve_gate *g);
void serve_gate_free(serve_gate *g);

#endif
