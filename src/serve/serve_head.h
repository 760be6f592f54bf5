/* The request head (request line and header fields) checked before
 * libmicrohttpd sees a connection: the gate (serve_gate.c) peeks at the
 * bytes that have arrived and asks whether the head is complete and one the
 * server will take. Anything refused here is answered with a JSON error by
 * the gate, so the HTTP library's own HTML error pages are never reached. */
#ifndef NC_SERVE_HEAD_H
#define NC_SERVE_HEAD_H

#include <stddef.h>

typedef struct serve_head_limits {
    size_t max_line_bytes; /* request line, CRLF included (414 beyond) */
    size_t max_head_bytes; /* the whole head, final CRLF CRLF included (431 beyond) */
    size_t max_body_bytes; /* Content-Length above this: 413 */
} serve_head_limits;

typedef struct serve_head_verdict {
    int status;       /* 0: incomplete, wait for more; 200: acceptable; else the error status */
    char msg[160];    /* the error's message */
    const char *code; /* the error's code */
    size_t head_len;  /* bytes of the head when status == 200, skip included */
    size_t skip;      /* bytes before the request line (one ignored CRLF), which
                         the caller consumes before the HTTP library reads */
} serve_head_verdict;

/* Judges buf[0..len), the bytes received so far. is_eof: the client closed
 * its side, so an incomplete head is final (400). */
void serve_head_check(const char *buf, size_t len, int is_eof, const serve_head_limits *lim,
                      serve_head_verdict *v);

#endif
