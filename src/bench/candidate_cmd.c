/* External-command candidates.
 * cmd:SHELL  forks `sh -c SHELL` per decision with the item on stdin (a temp
 *            file written before the clock starts) and stdout on a pipe that
 *            the harness drains: the decision ends when the command exits
 *            and its stdout closes; exit status 0 means completed.
 * pipe:SHELL one process for the whole run; load ends at its first output
 *            line; a decision is one escaped request line written to its
 *            stdin (a socket, so a dead reader is an error, not SIGPIPE) and
 *            one answer line read back. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/timer.h"
#include "bench/candidate.h"

typedef struct cmd_impl {
    char *shell;
    int is_persistent;
    /* cmd: the item file */
    char item_path[64];
    const nc_bench_item *written; /* which item the file holds */
    /* pipe: the process and its channels */
    pid_t pid;
    int req_fd, resp_fd;
    char *req; /* the prepared request line */
    size_t req_len, req_cap;
    char rbuf[4096]; /* answer bytes not yet consumed */
    size_t rlen;
    int is_out_of_step; /* an answer timed out: later answers would be misaligned */
} cmd_impl;

static void kill_group(pid_t pid) {
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Forks `sh -c shell` in its own process group with the given stdin/stdout. */
static nc_status spawn(const char *shell, int in_fd, int out_fd, int close_fd, pid_t *pid,
                       nc_error *err) {
    pid_t p = fork();
    if (p < 0) return nc_fail(err, NC_ERR_IO, "fork: %s", strerror(errno));
    if (p == 0) {
        setpgid(0, 0);
        if (close_fd >= 0) close(close_fd);
        if (in_fd >= 0 && dup2(in_fd, STDIN_FILENO) < 0) _exit(126);
        if (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0) _exit(126);
        if (in_fd > STDERR_FILENO) close(in_fd);
        if (out_fd > STDERR_FILENO) close(out_fd);
        execl("/bin/sh", "sh", "-c", shell, (char *)NULL);
        _exit(127);
    }
    setpgid(p, p); /* also here: no race with the child's own call */
    *pid = p;
    return NC_OK;
}

/* --- cmd: one process per decision ----------------------------------------- */

static nc_status cmd_load(nc_candidate *c, nc_error *err) {
    cmd_impl *m = c->impl;
    snprintf(m->item_path, sizeof m->item_path, "/tmp/nectar-bench-item-XXXXXX");
    int fd = mkstemp(m->item_path);
    if (fd < 0) {
        m->item_path[0] = '\0';
        return nc_fail(err, NC_ERR_IO, "cmd candidate: cannot create an item file: %s",
                       strerror(errno));
    }
    close(fd);
    m->written = NULL;
    return NC_OK;
}

static nc_status write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return NC_ERR_IO;
        p += k;
        n -= (size_t)k;
    }
    return NC_OK;
}

static nc_status cmd_prepare(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    cmd_impl *m = c->impl;
    if (m->written == item) return NC_OK;
    int fd = open(m->item_path, O_WRONLY | O_TRUNC);
    if (fd < 0) return nc_fail(err, NC_ERR_IO, "%s: %s", m->item_path, strerror(errno));
    nc_status st = write_all(fd, item->data, item->len);
    if (close(fd) != 0) st = NC_ERR_IO;
    if (st != NC_OK) return nc_fail(err, NC_ERR_IO, "%s: write failed", m->item_path);
    m->written = item;
    return NC_OK;
}

static nc_status cmd_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    (void)item;
    cmd_impl *m = c->impl;
    int in = open(m->item_path, O_RDONLY);
    if (in < 0) return nc_fail(err, NC_ERR_IO, "%s: %s", m->item_path, strerror(errno));
    int out[2];
    if (pipe(out) != 0) {
        close(in);
        return nc_fail(err, NC_ERR_IO, "pipe: %s", strerror(errno));
    }
    pid_t pid;
    nc_status st = spawn(m->shell, in, out[1], out[0], &pid, err);
    close(in);
    close(out[1]);
    if (st != NC_OK) {
        close(out[0]);
        return st;
    }
    /* drain stdout until it closes (the command and its children are done) */
    double deadline = nc_now_s() + c->timeout_s;
    char buf[4096];
    int is_timeout = 0;
    for (;;) {
        int ms = (int)((deadline - nc_now_s()) * 1000);
        if (ms <= 0) {
            is_timeout = 1;
            break;
        }
        struct pollfd pfd = {out[0], POLLIN, 0};
        int r = poll(&pfd, 1, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) {
            is_timeout = 1;
            break;
        }
        ssize_t n = read(out[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
    }
    close(out[0]);
    if (is_timeout) {
        kill_group(pid);
        return nc_fail(err, NC_ERR_RANGE, "cmd candidate: no exit within %g s", c->timeout_s);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return nc_fail(err, NC_ERR_IO, "waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return nc_fail(err, NC_ERR_IO, "cmd candidate: command failed (%s %d)",
                       WIFEXITED(status) ? "exit status" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return NC_OK;
}

/* --- pipe: one persistent process ----------------------------------------- */

/* Reads one line (without the newline) into line[cap]; 0 ok, else an error. */
static nc_status read_line(cmd_impl *m, double timeout_s, char *line, size_t cap, nc_error *err) {
    double deadline = nc_now_s() + timeout_s;
    for (;;) {
        char *nl = memchr(m->rbuf, '\n', m->rlen);
        if (nl) {
            size_t n = (size_t)(nl - m->rbuf);
            size_t k = n < cap - 1 ? n : cap - 1;
            memcpy(line, m->rbuf, k);
            line[k] = '\0';
            memmove(m->rbuf, nl + 1, m->rlen - n - 1);
            m->rlen -= n + 1;
            return NC_OK;
        }
        if (m->rlen == sizeof m->rbuf) m->rlen = 0; /* an over-long line: keep its tail */
        int ms = (int)((deadline - nc_now_s()) * 1000);
        if (ms <= 0)
            return nc_fail(err, NC_ERR_RANGE, "pipe candidate: no answer within %g s", timeout_s);
        struct pollfd pfd = {m->resp_fd, POLLIN, 0};
        int r = poll(&pfd, 1, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) continue;
        ssize_t n = read(m->resp_fd, m->rbuf + m->rlen, sizeof m->rbuf - m->rlen);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return nc_fail(err, NC_ERR_IO, "pipe candidate: the process closed its output");
        m->rlen += (size_t)n;
    }
}

static nc_status pipe_load(nc_candidate *c, nc_error *err) {
    cmd_impl *m = c->impl;
    int sv[2], out[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return nc_fail(err, NC_ERR_IO, "socketpair: %s", strerror(errno));
    if (pipe(out) != 0) {
        close(sv[0]);
        close(sv[1]);
        return nc_fail(err, NC_ERR_IO, "pipe: %s", strerror(errno));
    }
#ifdef SO_NOSIGPIPE
    int one = 1;
    setsockopt(sv[0], SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
    /* the parent's ends must not leak into the child */
    fcntl(sv[0], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    nc_status st = spawn(m->shell, sv[1], out[1], -1, &m->pid, err);
    close(sv[1]);
    close(out[1]);
    if (st != NC_OK) {
        close(sv[0]);
        close(out[0]);
        return st;
    }
    m->req_fd = sv[0];
    m->resp_fd = out[0];
    m->rlen = 0;
    char line[256];
    st = read_line(m, c->timeout_s, line, sizeof line, err);
    if (st != NC_OK) return nc_fail_prefix(err, "pipe candidate: waiting for its ready line");
    return NC_OK;
}

static nc_status pipe_prepare(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    cmd_impl *m = c->impl;
    size_t need = 2 * item->len + 2;
    if (need > m->req_cap) {
        char *r = realloc(m->req, need);
        if (!r) return nc_fail(err, NC_ERR_NOMEM, "pipe candidate: out of memory");
        m->req = r;
        m->req_cap = need;
    }
    size_t n = 0;
    for (size_t i = 0; i < item->len; i++) {
        char ch = item->data[i];
        if (ch == '\\' || ch == '\n') {
            m->req[n++] = '\\';
            m->req[n++] = ch == '\n' ? 'n' : '\\';
        } else {
            m->req[n++] = ch;
        }
    }
    m->req[n++] = '\n';
    m->req_len = n;
    return NC_OK;
}

static nc_status pipe_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    (void)item;
    cmd_impl *m = c->impl;
    if (m->is_out_of_step)
        return nc_fail(err, NC_ERR_IO, "pipe candidate: stopped after an answer timed out");
    const char *p = m->req;
    size_t n = m->req_len;
    while (n) {
#ifdef MSG_NOSIGNAL
        ssize_t k = send(m->req_fd, p, n, MSG_NOSIGNAL);
#else
        ssize_t k = send(m->req_fd, p, n, 0);
#endif
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return nc_fail(err, NC_ERR_IO, "pipe candidate: the process stopped reading");
        p += k;
        n -= (size_t)k;
    }
    char line[256];
    nc_status st = read_line(m, c->timeout_s, line, sizeof line, err);
    if (st == NC_ERR_RANGE) {
        /* a late answer would be taken for the next request's: stop here */
        m->is_out_of_step = 1;
        kill(-m->pid, SIGKILL);
    }
    NC_TRY(st);
    if (!strncmp(line, "error", 5))
        return nc_fail(err, NC_ERR_IO, "pipe candidate answered: %.200s", line);
    return NC_OK;
}

static void cmd_unload(nc_candidate *c) {
    cmd_impl *m = c->impl;
    if (!m) return;
    if (m->item_path[0]) unlink(m->item_path);
    if (m->pid > 0) {
        close(m->req_fd); /* EOF: a well-behaved process exits now */
        double deadline = nc_now_s() + 2.0;
        int done = 0;
        while (!done && nc_now_s() < deadline) {
            done = waitpid(m->pid, NULL, WNOHANG) == m->pid;
            if (!done) usleep(5000);
        }
        if (!done) kill_group(m->pid);
        close(m->resp_fd);
    }
    free(m->req);
    free(m->shell);
    free(m);
    c->impl = NULL;
}

static const nc_candidate_ops cmd_ops = {cmd_load, cmd_prepare, cmd_run, cmd_unload};
static const nc_candidate_ops pipe_ops = {pipe_load, pipe_prepare, pipe_run, cmd_unload};

nc_status nc_candidate_cmd_init(nc_candidate *c, const char *shell, int is_persistent,
                                nc_error *err) {
    if (!*shell) return nc_fail(err, NC_ERR_INVALID, "candidate '%s': empty command", c->spec);
    cmd_impl *m = calloc(1, sizeof *m);
    char *s = strdup(shell);
    if (!m || !s) {
        free(m);
        free(s);
        return nc_fail(err, NC_ERR_NOMEM, "candidate: out of memory");
    }
    m->shell = s;
    m->is_persistent = is_persistent;
    m->pid = -1;
    m->req_fd = m->resp_fd = -1;
    c->impl = m;
    c->ops = is_persistent ? &pipe_ops : &cmd_ops;
    return NC_OK;
}
